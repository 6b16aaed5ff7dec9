#include "report/html_text.hpp"

#include <cstdint>
#include <cstdio>

namespace tea::report {
namespace {

// The length of the well-formed UTF-8 sequence at the start of `s` and its code point, or 0 when
// the first byte starts none (overlong forms, surrogates and values past U+10FFFF included).
std::size_t utf8_sequence(std::string_view s, std::uint32_t *cp) {
    const auto b0 = static_cast<unsigned char>(s[0]);
    std::size_t n = 0;
    std::uint32_t min = 0;
    if (b0 < 0x80) {
        *cp = b0;
        return 1;
    }
    if (b0 >= 0xc2 && b0 <= 0xdf) {
        n = 2;
        *cp = b0 & 0x1fU;
        min = 0x80;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
        n = 3;
        *cp = b0 & 0x0fU;
        min = 0x800;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        n = 4;
        *cp = b0 & 0x07U;
        min = 0x10000;
    } else {
        return 0;
    }
    if (s.size() < n) return 0;
    for (std::size_t i = 1; i < n; ++i) {
        const auto b = static_cast<unsigned char>(s[i]);
        if ((b & 0xc0U) != 0x80U) return 0;
        *cp = (*cp << 6U) | (b & 0x3fU);
    }
    if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff)) return 0;
    return n;
}

// Characters shown as an escape although well-formed: they reorder or hide the text around them
// (a file name holding U+202E would read backwards on the page).
bool hides_or_reorders(std::uint32_t cp) {
    return (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2060 && cp <= 0x2069) || cp == 0x061c || cp == 0xfeff ||
           (cp >= 0xfff9 && cp <= 0xfffb);
}

void escape_byte(std::string &out, unsigned char byte) {
    char buf[8];
    (void)std::snprintf(buf, sizeof buf, "\\x%02x", byte);
    out += buf;
}

}  // namespace

std::string html_text(std::string_view bytes, bool keep_breaks) {
    std::string out;
    out.reserve(bytes.size() + bytes.size() / 8);
    for (std::size_t i = 0; i < bytes.size();) {
        std::uint32_t cp = 0;
        const std::size_t n = utf8_sequence(bytes.substr(i), &cp);
        if (n == 0) {
            escape_byte(out, static_cast<unsigned char>(bytes[i]));
            ++i;
            continue;
        }
        switch (cp) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            case '\\':
                // Doubled, so that a name holding the text "\x41" never reads as an escape.
                out += "\\\\";
                break;
            default:
                if ((cp == '\n' || cp == '\t') && keep_breaks) {
                    out += static_cast<char>(cp);
                } else if (cp < 0x20 || cp == 0x7f) {
                    escape_byte(out, static_cast<unsigned char>(cp));
                } else if ((cp >= 0x80 && cp <= 0x9f) || hides_or_reorders(cp)) {
                    char buf[16];
                    (void)std::snprintf(buf, sizeof buf, "\\u{%04x}", cp);
                    out += buf;
                } else {
                    out.append(bytes.substr(i, n));
                }
        }
        i += n;
    }
    return out;
}

std::string html_excerpt(std::string_view bytes, std::size_t limit, bool keep_breaks) {
    if (bytes.size() <= limit) return html_text(bytes, keep_breaks);
    std::size_t cut = limit;
    // Back to a character's start, so the cut never shows half a character as bytes.
    while (cut > 0 && limit - cut < 4 &&
           (static_cast<unsigned char>(bytes[cut]) & 0xc0U) == 0x80U) {
        --cut;
    }
    return html_text(bytes.substr(0, cut), keep_breaks) + " … " +
           std::to_string(bytes.size() - cut) + " more bytes";
}

}  // namespace tea::report
