#include "exec/terminal_text.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace tea::exec {
namespace {

// The bytes shown as they are whatever the charset: printable ASCII, line feed, tab and carriage
// return.
constexpr std::array<bool, 256> kept_ascii = [] {
    std::array<bool, 256> kept{};
    for (int c = 0x20; c < 0x7f; ++c) {
        kept[static_cast<std::size_t>(c)] = true;
    }
    kept['\n'] = kept['\t'] = kept['\r'] = true;
    return kept;
}();

enum class Sequence { complete, incomplete, malformed };

// The UTF-8 sequence at the start of [p, p + n), whose first byte is 0x80 or above: strict
// UTF-8 (RFC 3629), so no overlong form, surrogate or code point past U+10FFFF passes.
Sequence utf8_sequence(const unsigned char *p, std::size_t n, std::size_t &length) {
    const unsigned char lead = p[0];
    std::size_t need = 0;
    unsigned char second_low = 0x80;
    unsigned char second_high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) {
        need = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        need = 3;
        second_low = lead == 0xe0 ? 0xa0 : 0x80;   // overlong below U+0800
        second_high = lead == 0xed ? 0x9f : 0xbf;  // surrogates
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        need = 4;
        second_low = lead == 0xf0 ? 0x90 : 0x80;   // overlong below U+10000
        second_high = lead == 0xf4 ? 0x8f : 0xbf;  // past U+10FFFF
    } else {
        return Sequence::malformed;
    }
    for (std::size_t i = 1; i < need; ++i) {
        if (i >= n) {
            return Sequence::incomplete;
        }
        const unsigned char low = i == 1 ? second_low : 0x80;
        const unsigned char high = i == 1 ? second_high : 0xbf;
        if (p[i] < low || p[i] > high) {
            return Sequence::malformed;
        }
    }
    length = need;
    return Sequence::complete;
}

// U+0080..U+009F, encoded C2 80..C2 9F.
bool is_c1(const unsigned char *p) {
    return p[0] == 0xc2 && p[1] <= 0x9f;
}

// Each writes a rendering at `w` and returns where it ends; the caller has made room for four bytes
// per input byte, the longest rendering (\xNN).
char *write_hex(unsigned char c, char *w) {
    constexpr std::string_view digits = "0123456789abcdef";
    w[0] = '\\';
    w[1] = 'x';
    w[2] = digits[c >> 4U];
    w[3] = digits[c & 0xfU];
    return w + 4;
}

// A C0 control or DEL: ^@ .. ^_, and ^?.
char *write_caret(unsigned char c, char *w) {
    w[0] = '^';
    w[1] = static_cast<char>(c == 0x7f ? '?' : c + 0x40);
    return w + 2;
}

// A complete sequence: as it is, or each byte escaped when it encodes a C1 control.
char *write_sequence(const unsigned char *p, std::size_t length, char *w) {
    if (is_c1(p)) {
        for (std::size_t i = 0; i < length; ++i) {
            w = write_hex(p[i], w);
        }
        return w;
    }
    return std::copy_n(reinterpret_cast<const char *>(p), length, w);
}

bool names_utf8(std::string_view locale) {
    std::string lower{locale};
    std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
        return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    });
    return lower.find("utf-8") != std::string::npos || lower.find("utf8") != std::string::npos;
}

}  // namespace

Charset locale_charset(const char *lc_all, const char *lc_ctype, const char *lang) {
    for (const char *name : {lc_all, lc_ctype, lang}) {
        if (name != nullptr && name[0] != '\0') {
            return names_utf8(name) ? Charset::utf8 : Charset::ascii;
        }
    }
    return Charset::ascii;
}

Charset terminal_charset() {
    // Read once, at the first call's output; nothing in the runtime changes its environment.
    static const Charset charset =
        locale_charset(std::getenv("LC_ALL"),    // NOLINT(concurrency-mt-unsafe)
                       std::getenv("LC_CTYPE"),  // NOLINT(concurrency-mt-unsafe)
                       std::getenv("LANG"));     // NOLINT(concurrency-mt-unsafe)
    return charset;
}

std::size_t TerminalText::shown_utf8_length(std::string_view bytes) {
    const auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
    std::size_t length = 0;
    if (utf8_sequence(p, bytes.size(), length) != Sequence::complete || is_c1(p)) {
        return 0;
    }
    return length;
}

std::string_view TerminalText::render(std::string_view bytes) {
    char *const first = room(4 * (held_size_ + bytes.size()));
    char *w = first;
    const auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
    const auto *end = p + bytes.size();
    if (held_size_ > 0 && p < end) {
        // The held start of a sequence, completed with the first bytes of this piece.
        std::array<unsigned char, 4> joined{};
        std::copy_n(held_.begin(), held_size_, joined.begin());
        const std::size_t taken = std::min<std::size_t>(joined.size() - held_size_, bytes.size());
        std::copy_n(p, taken, joined.begin() + static_cast<std::ptrdiff_t>(held_size_));
        std::size_t length = 0;
        switch (utf8_sequence(joined.data(), held_size_ + taken, length)) {
            case Sequence::complete:
                w = write_sequence(joined.data(), length, w);
                p += length - held_size_;
                held_size_ = 0;
                break;
            case Sequence::incomplete:  // still short: this whole piece joins the held bytes
                std::copy_n(p, taken, held_.begin() + static_cast<std::ptrdiff_t>(held_size_));
                held_size_ += taken;
                p = end;
                break;
            case Sequence::malformed:  // the held bytes are shown, this piece decided afresh
                w = write_held(w);
                break;
        }
    }
    while (p < end) {
        const auto *run = p;
        while (p < end && kept_ascii[*p]) {
            ++p;
        }
        if (p != run) {
            const auto run_size = static_cast<std::size_t>(p - run);
            std::memcpy(w, run, run_size);  // NOLINT(bugprone-not-null-terminated-result)
            w += run_size;
        }
        if (p == end) {
            break;
        }
        if (*p < 0x80) {
            w = write_caret(*p++, w);
            continue;
        }
        if (charset_ == Charset::ascii) {
            w = write_hex(*p++, w);
            continue;
        }
        std::size_t length = 0;
        switch (utf8_sequence(p, static_cast<std::size_t>(end - p), length)) {
            case Sequence::complete:
                w = write_sequence(p, length, w);
                p += length;
                break;
            case Sequence::incomplete:
                held_size_ = static_cast<std::size_t>(end - p);
                std::copy(p, end, held_.begin());
                p = end;
                break;
            case Sequence::malformed:
                w = write_hex(*p++, w);
                break;
        }
    }
    return {first, static_cast<std::size_t>(w - first)};
}

std::string_view TerminalText::finish() {
    char *const first = room(4 * held_size_);
    return {first, static_cast<std::size_t>(write_held(first) - first)};
}

char *TerminalText::room(std::size_t size) {
    if (size > capacity_) {
        // Left uninitialised: only what is written is read.
        buffer_ = std::make_unique_for_overwrite<char[]>(size);
        capacity_ = size;
    }
    return buffer_.get();
}

char *TerminalText::write_held(char *w) {
    for (std::size_t i = 0; i < held_size_; ++i) {
        w = write_hex(static_cast<unsigned char>(held_[i]), w);
    }
    held_size_ = 0;
    return w;
}

}  // namespace tea::exec
