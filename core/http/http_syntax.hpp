// The bits of HTTP/1.1's grammar that both the request checks and the response parser apply.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace tea::http {

// tchar of RFC 9110: what a method and a header name are made of.
inline bool is_tchar(unsigned char c) {
    if (c >= '0' && c <= '9') return true;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

inline bool is_token(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return is_tchar(static_cast<unsigned char>(c));
    });
}

// ASCII lowercase: header names compare without regard to case.
inline std::string lowercase(std::string_view text) {
    std::string out(text);
    for (char &c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

}  // namespace tea::http
