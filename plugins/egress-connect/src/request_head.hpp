// A strict, bounded reader of an HTTP/1.x request head, and the host and port rules the egress
// proxy applies to a CONNECT target. Nothing here allocates beyond the head it is given, and every
// byte sequence yields either a head or a classified error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tea::egress {

// Bounds on what a client can make the proxy hold before it decides (memory exhaustion).
inline constexpr std::size_t kMaxHeadBytes =
    std::size_t{16} * 1024;  // request line + headers + CRLFCRLF
inline constexpr std::size_t kMaxHeaderCount = 100;
inline constexpr std::size_t kMaxHostBytes = 253;
inline constexpr std::size_t kMaxMethodBytes = 32;

enum class HeadError {
    too_large = 1,     // no end of head within kMaxHeadBytes
    incomplete,        // the bytes end before the head's blank line
    too_many_headers,  // more than kMaxHeaderCount header lines
    bad_line_ending,   // a CR or LF that is not part of a CRLF pair, or a NUL
    bad_request_line,  // not exactly METHOD SP TARGET SP VERSION
    bad_method,        // not a token
    bad_target,        // empty, or a byte outside visible ASCII
    bad_version,       // not HTTP/1.0 or HTTP/1.1
    bad_header,        // not NAME ":" VALUE, a folded line, or a control byte in a value
    bad_host,          // the host of a CONNECT target is spelled otherwise than the rules allow
    bad_port,          // the port of a CONNECT target is not 1..65535 in plain decimal
};

// A sentence naming the problem, for a 400 body and the refusal record.
std::string_view describe(HeadError error);

// The host and port of a CONNECT target, normalized: a name is lowercased, an IPv6 literal is
// held without brackets in the canonical text inet_ntop gives.
struct Authority {
    std::string host;
    std::uint16_t port = 0;
    bool ipv6 = false;

    // host:port, with the IPv6 literal in brackets.
    std::string text() const;
    friend bool operator==(const Authority &, const Authority &) = default;
};

struct Header {
    std::string name;   // lowercased; header names compare case-insensitively
    std::string value;  // surrounding spaces and tabs removed
};

struct RequestHead {
    std::string method;  // case-sensitive, as sent
    std::string target;  // the request-target as sent
    int minor_version = 1;
    std::vector<Header> headers;
    std::optional<Authority> authority;  // set for CONNECT only
    std::size_t length = 0;              // bytes of the head, through its CRLFCRLF

    // The first header with this (lowercase) name, or nullptr.
    const Header *find(std::string_view lowercase_name) const;
};

struct HeadFailure {
    HeadError error;
    std::string method;  // what the request line held, when it got that far
    std::string target;
};

using HeadParse = std::variant<RequestHead, HeadFailure>;

// Where the head ends in a buffer that a connection fills in pieces. `scanned` is how far an
// earlier call looked (pass 0 first, then the returned value), so a head that arrives a byte at
// a time is still scanned in linear time (a drip-fed head cannot cost quadratic CPU). malformed:
// a NUL, a lone CR or LF, or kMaxHeadBytes without an end; parse_request_head names which.
struct HeadBoundary {
    enum class State { incomplete = 1, complete, malformed };
    State state = State::incomplete;
    std::size_t length = 0;   // complete: bytes of the head through CRLFCRLF
    std::size_t scanned = 0;  // incomplete: resume the scan from here
};
HeadBoundary find_head_end(std::string_view buffer, std::size_t scanned = 0);

// Parses one complete head at the start of `bytes` (bytes after its CRLFCRLF are ignored). Bytes
// that stop before the head's end give incomplete, or too_large from kMaxHeadBytes on, unless a
// syntax error comes first.
HeadParse parse_request_head(std::string_view bytes);

// "host:port" or "[ipv6]:port" -> Authority.
std::variant<Authority, HeadError> parse_authority(std::string_view text);

// A host as a request or an egress item spells it (an IPv6 literal with or without brackets),
// normalized as Authority::host; nullopt when it breaks the host rules.
std::optional<std::string> normalize_host(std::string_view host, bool *is_ipv6 = nullptr);

}  // namespace tea::egress
