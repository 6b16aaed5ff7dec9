#include "request_head.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <charconv>

namespace tea::egress {
namespace {

constexpr char kCr = '\r';
constexpr char kLf = '\n';

bool is_tchar(char c) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z')) return true;
    static constexpr std::string_view kOtherTokenBytes = "!#$%&'*+-.^_`|~";
    return kOtherTokenBytes.find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

bool is_visible_ascii(char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x21 && u <= 0x7e;
}

// A field value byte: HTAB, SP, VCHAR or obs-text. DEL and the other controls are refused.
bool is_field_value_byte(char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u != 0x7f);
}

char to_lower_ascii(char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string lowercase(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), to_lower_ascii);
    return out;
}

std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// Splits a head into CRLF-terminated lines, refusing a lone CR, a lone LF and a NUL: a
// proxy and a server that split lines differently is how request smuggling starts.
class LineReader {
   public:
    LineReader(std::string_view window, bool truncated) : window_(window), truncated_(truncated) {}

    // The next line without its CRLF; an error when the bytes run out or break the rules.
    std::variant<std::string_view, HeadError> next() {
        for (std::size_t i = pos_; i < window_.size(); ++i) {
            const char c = window_[i];
            if (c == kLf || c == '\0') return HeadError::bad_line_ending;
            if (c != kCr) continue;
            if (i + 1 >= window_.size()) break;
            if (window_[i + 1] != kLf) return HeadError::bad_line_ending;
            const std::string_view line = window_.substr(pos_, i - pos_);
            pos_ = i + 2;
            return line;
        }
        return truncated_ ? HeadError::too_large : HeadError::incomplete;
    }

    std::size_t position() const { return pos_; }

   private:
    std::string_view window_;
    bool truncated_;
    std::size_t pos_ = 0;
};

std::optional<std::uint16_t> parse_port(std::string_view text) {
    // Plain decimal only (no sign, leading zero or space): a port another parser reads as a
    // different number would slip past the policy's port match.
    if (text.empty() || text.size() > 5 || text.front() == '0') return std::nullopt;
    if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::nullopt;
    }
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    if (value < 1 || value > 65535) return std::nullopt;
    return static_cast<std::uint16_t>(value);
}

std::optional<std::string> canonical_ipv6(std::string_view text) {
    // inet_pton alone decides; the pre-check only bounds the copy and keeps zone ids ("%eth0")
    // out, since a zone would let one spelling name different interfaces.
    if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
    const bool plausible = std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
               c == ':' || c == '.';
    });
    if (!plausible) return std::nullopt;
    std::array<char, INET6_ADDRSTRLEN> buffer{};
    std::copy(text.begin(), text.end(), buffer.begin());
    in6_addr address{};
    if (inet_pton(AF_INET6, buffer.data(), &address) != 1) return std::nullopt;
    std::array<char, INET6_ADDRSTRLEN> canonical{};
    if (inet_ntop(AF_INET6, &address, canonical.data(), canonical.size()) == nullptr) {
        return std::nullopt;
    }
    return std::string(canonical.data());
}

std::optional<std::string> canonical_name(std::string_view text) {
    if (text.empty() || text.size() > kMaxHostBytes) return std::nullopt;
    // Letters, digits, '.', '-', '_' only: no '*' wildcard, no '%' escapes or zones, no '@'
    // userinfo and no spaces or controls that a resolver or a log could read differently.
    const bool allowed = std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '.' || c == '-' || c == '_';
    });
    if (!allowed) return std::nullopt;
    // No empty label: "example.com." and "example..com" would otherwise be second spellings
    // of a listed name.
    if (text.front() == '.' || text.back() == '.' || text.find("..") != std::string_view::npos) {
        return std::nullopt;
    }
    return lowercase(text);
}

}  // namespace

std::string_view describe(HeadError error) {
    switch (error) {
        case HeadError::too_large:
            return "the request head is larger than 16384 bytes";
        case HeadError::incomplete:
            return "the request head ends before its blank line";
        case HeadError::too_many_headers:
            return "the request head has more than 100 header lines";
        case HeadError::bad_line_ending:
            return "the request head has a line break other than CRLF, or a NUL byte";
        case HeadError::bad_request_line:
            return "the request line is not METHOD SP TARGET SP VERSION";
        case HeadError::bad_method:
            return "the request method is not a token";
        case HeadError::bad_target:
            return "the request target is empty or holds bytes outside visible ASCII";
        case HeadError::bad_version:
            return "the request version is not HTTP/1.0 or HTTP/1.1";
        case HeadError::bad_header:
            return "a header line is not NAME: VALUE (or is folded, or holds a control byte)";
        case HeadError::bad_host:
            return "the CONNECT host is not letters, digits, '.', '-' and '_' of at most 253 "
                   "bytes, nor a bracketed IPv6 address";
        case HeadError::bad_port:
            return "the CONNECT port is not a decimal number from 1 to 65535";
    }
    return "the request head is malformed";
}

std::string Authority::text() const {
    std::string out;
    out.reserve(host.size() + 8);
    if (ipv6) out += '[';
    out += host;
    if (ipv6) out += ']';
    out += ':';
    out += std::to_string(port);
    return out;
}

const Header *RequestHead::find(std::string_view lowercase_name) const {
    for (const Header &header : headers) {
        if (header.name == lowercase_name) return &header;
    }
    return nullptr;
}

HeadBoundary find_head_end(std::string_view buffer, std::size_t scanned) {
    const std::size_t limit = std::min(buffer.size(), kMaxHeadBytes);
    for (std::size_t i = scanned; i < limit; ++i) {
        const char c = buffer[i];
        if (c == '\0') return {HeadBoundary::State::malformed, 0, i};
        if (c == kLf) {
            if (i == 0 || buffer[i - 1] != kCr) return {HeadBoundary::State::malformed, 0, i};
            if (i >= 3 && buffer[i - 2] == kLf && buffer[i - 3] == kCr) {
                return {HeadBoundary::State::complete, i + 1, i + 1};
            }
            continue;
        }
        if (c == kCr) {
            // A CR is judged with the byte after it; wait for that byte.
            if (i + 1 >= buffer.size()) return {HeadBoundary::State::incomplete, 0, i};
            if (buffer[i + 1] != kLf) return {HeadBoundary::State::malformed, 0, i};
        }
    }
    if (limit >= kMaxHeadBytes) return {HeadBoundary::State::malformed, 0, limit};
    return {HeadBoundary::State::incomplete, 0, limit};
}

std::optional<std::string> normalize_host(std::string_view host, bool *is_ipv6) {
    if (is_ipv6 != nullptr) *is_ipv6 = false;
    std::optional<std::string> out;
    if (!host.empty() && host.front() == '[') {
        if (host.size() < 2 || host.back() != ']') return std::nullopt;
        out = canonical_ipv6(host.substr(1, host.size() - 2));
    } else if (host.find(':') != std::string_view::npos) {
        out = canonical_ipv6(host);
    } else {
        return canonical_name(host);
    }
    if (out && is_ipv6 != nullptr) *is_ipv6 = true;
    return out;
}

std::variant<Authority, HeadError> parse_authority(std::string_view text) {
    Authority authority;
    std::string_view port_text;
    if (!text.empty() && text.front() == '[') {
        const std::size_t close = text.find(']');
        if (close == std::string_view::npos) return HeadError::bad_host;
        auto host = canonical_ipv6(text.substr(1, close - 1));
        if (!host) return HeadError::bad_host;
        const std::string_view rest = text.substr(close + 1);
        if (rest.empty() || rest.front() != ':') return HeadError::bad_port;
        authority.host = std::move(*host);
        authority.ipv6 = true;
        port_text = rest.substr(1);
    } else {
        const std::size_t colon = text.rfind(':');
        if (colon == std::string_view::npos) {
            // A CONNECT target must name its port; a bare name is refused on its host first.
            if (!canonical_name(text)) return HeadError::bad_host;
            return HeadError::bad_port;
        }
        // A name never holds ':', so an unbracketed IPv6 literal is a badly spelled host: its
        // last group and the port could not be told apart.
        auto host = canonical_name(text.substr(0, colon));
        if (!host) return HeadError::bad_host;
        authority.host = std::move(*host);
        port_text = text.substr(colon + 1);
    }
    const auto port = parse_port(port_text);
    if (!port) return HeadError::bad_port;
    authority.port = *port;
    return authority;
}

HeadParse parse_request_head(std::string_view bytes) {
    const bool truncated = bytes.size() >= kMaxHeadBytes;
    LineReader lines(bytes.substr(0, std::min(bytes.size(), kMaxHeadBytes)), truncated);
    HeadFailure failure{HeadError::bad_request_line, {}, {}};

    auto request_line = lines.next();
    if (auto *error = std::get_if<HeadError>(&request_line)) {
        failure.error = *error;
        return failure;
    }
    const std::string_view line = std::get<std::string_view>(request_line);
    const std::size_t first_space = line.find(' ');
    const std::size_t second_space =
        first_space == std::string_view::npos ? first_space : line.find(' ', first_space + 1);
    if (second_space == std::string_view::npos) return failure;
    const std::string_view method = line.substr(0, first_space);
    const std::string_view target = line.substr(first_space + 1, second_space - first_space - 1);
    const std::string_view version = line.substr(second_space + 1);
    failure.method = std::string(method.substr(0, kMaxMethodBytes));
    failure.target = std::string(target);
    if (method.empty() || target.empty() || version.find(' ') != std::string_view::npos) {
        return failure;
    }
    if (method.size() > kMaxMethodBytes || !is_token(method)) {
        failure.error = HeadError::bad_method;
        return failure;
    }
    if (!std::all_of(target.begin(), target.end(), is_visible_ascii)) {
        failure.error = HeadError::bad_target;
        return failure;
    }
    RequestHead head;
    if (version == "HTTP/1.1") {
        head.minor_version = 1;
    } else if (version == "HTTP/1.0") {
        head.minor_version = 0;
    } else {
        failure.error = HeadError::bad_version;
        return failure;
    }
    head.method = std::string(method);
    head.target = std::string(target);

    for (;;) {
        auto next = lines.next();
        if (auto *error = std::get_if<HeadError>(&next)) {
            failure.error = *error;
            return failure;
        }
        const std::string_view header_line = std::get<std::string_view>(next);
        if (header_line.empty()) break;
        if (head.headers.size() >= kMaxHeaderCount) {
            failure.error = HeadError::too_many_headers;
            return failure;
        }
        // A line that starts with white space continues the one before (obs-fold); two readers
        // that unfold differently see different headers, so it is refused.
        const std::size_t colon = header_line.find(':');
        if (colon == std::string_view::npos || !is_token(header_line.substr(0, colon))) {
            failure.error = HeadError::bad_header;
            return failure;
        }
        const std::string_view value = trim_ows(header_line.substr(colon + 1));
        if (!std::all_of(value.begin(), value.end(), is_field_value_byte)) {
            failure.error = HeadError::bad_header;
            return failure;
        }
        head.headers.push_back({lowercase(header_line.substr(0, colon)), std::string(value)});
    }
    head.length = lines.position();

    if (head.method == "CONNECT") {
        auto authority = parse_authority(head.target);
        if (auto *error = std::get_if<HeadError>(&authority)) {
            failure.error = *error;
            return failure;
        }
        head.authority = std::move(std::get<Authority>(authority));
    }
    return head;
}

}  // namespace tea::egress
