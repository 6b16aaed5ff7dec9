// Byte strings in JSON documents that cross the plugin boundary.
//
// Paths, arguments and environment entries are bytes, not text: a hostile
// target may name a file with bytes that are not UTF-8, and the runtime must
// carry them exactly. JSON strings hold only valid UTF-8, so a byte string that
// is valid UTF-8 is written as a plain JSON string and any other is written as
// {"base64": "..."}. These helpers are header-only and need no JSON library;
// the caller picks the representation with is_valid_utf8().
#ifndef TEA_BYTES_HPP
#define TEA_BYTES_HPP

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tea::bytes {

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past U+10FFFF.
inline bool is_valid_utf8(std::string_view text) noexcept {
    const auto *p = reinterpret_cast<const unsigned char *>(text.data());
    const auto *end = p + text.size();
    while (p < end) {
        const unsigned char c = *p;
        if (c < 0x80) {
            ++p;
            continue;
        }
        int extra = 0;
        std::uint32_t cp = 0;
        std::uint32_t min = 0;
        if ((c & 0xE0U) == 0xC0U) {
            extra = 1;
            cp = c & 0x1FU;
            min = 0x80;
        } else if ((c & 0xF0U) == 0xE0U) {
            extra = 2;
            cp = c & 0x0FU;
            min = 0x800;
        } else if ((c & 0xF8U) == 0xF0U) {
            extra = 3;
            cp = c & 0x07U;
            min = 0x10000;
        } else {
            return false;
        }
        if (end - p <= extra) {
            return false;
        }
        for (int i = 1; i <= extra; ++i) {
            const unsigned char cc = p[i];
            if ((cc & 0xC0U) != 0x80U) {
                return false;
            }
            cp = (cp << 6U) | (cc & 0x3FU);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
        }
        p += extra + 1;
    }
    return true;
}

inline std::string base64_encode(std::string_view in) {
    static constexpr char table[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    std::size_t i = 0;
    // Each byte is widened to uint32_t before it is shifted: shifting the int it
    // would promote to is a sign conversion (-Wsign-conversion under UBSan).
    for (; i + 2 < in.size(); i += 3) {
        const std::uint32_t n = (std::uint32_t{static_cast<unsigned char>(in[i])} << 16U) |
                                (std::uint32_t{static_cast<unsigned char>(in[i + 1])} << 8U) |
                                std::uint32_t{static_cast<unsigned char>(in[i + 2])};
        out += table[(n >> 18U) & 63U];
        out += table[(n >> 12U) & 63U];
        out += table[(n >> 6U) & 63U];
        out += table[n & 63U];
    }
    if (i + 1 == in.size()) {
        const std::uint32_t n = std::uint32_t{static_cast<unsigned char>(in[i])} << 16U;
        out += table[(n >> 18U) & 63U];
        out += table[(n >> 12U) & 63U];
        out += "==";
    } else if (i + 2 == in.size()) {
        const std::uint32_t n = (std::uint32_t{static_cast<unsigned char>(in[i])} << 16U) |
                                (std::uint32_t{static_cast<unsigned char>(in[i + 1])} << 8U);
        out += table[(n >> 18U) & 63U];
        out += table[(n >> 12U) & 63U];
        out += table[(n >> 6U) & 63U];
        out += '=';
    }
    return out;
}

// Strict decoding: padding required, no whitespace; nullopt on any other input.
inline std::optional<std::string> base64_decode(std::string_view in) {
    if (in.size() % 4 != 0) {
        return std::nullopt;
    }
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') {
            return c - 'A';
        }
        if (c >= 'a' && c <= 'z') {
            return c - 'a' + 26;
        }
        if (c >= '0' && c <= '9') {
            return c - '0' + 52;
        }
        if (c == '+') {
            return 62;
        }
        if (c == '/') {
            return 63;
        }
        return -1;
    };
    std::string out;
    out.reserve(in.size() / 4 * 3);
    for (std::size_t i = 0; i < in.size(); i += 4) {
        std::array<int, 4> v{};
        int pad = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            const char c = in[i + k];
            if (c == '=' && i + 4 == in.size() && k >= 2) {
                v[k] = 0;
                ++pad;
                continue;
            }
            if (pad > 0) {
                return std::nullopt;  // data after padding
            }
            v[k] = value(c);
            if (v[k] < 0) {
                return std::nullopt;
            }
        }
        const auto n = (static_cast<std::uint32_t>(v[0]) << 18U) |
                       (static_cast<std::uint32_t>(v[1]) << 12U) |
                       (static_cast<std::uint32_t>(v[2]) << 6U) | static_cast<std::uint32_t>(v[3]);
        out += static_cast<char>((n >> 16U) & 0xFFU);
        if (pad < 2) {
            out += static_cast<char>((n >> 8U) & 0xFFU);
        }
        if (pad < 1) {
            out += static_cast<char>(n & 0xFFU);
        }
    }
    return out;
}

}  // namespace tea::bytes

#endif  // TEA_BYTES_HPP
