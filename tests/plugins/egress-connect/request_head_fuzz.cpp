// libFuzzer target for the request head reader. Besides "never crash", it checks that what the
// reader accepts obeys the rules the proxy relies on, and that reading a head in pieces decides
// exactly as reading it whole. Built with TEA_FUZZ_REPLAY_MAIN it is a plain program that
// replays a corpus, so any compiler exercises the same checks.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "request_head.hpp"

namespace {

using namespace tea::egress;

void require(bool holds, const char *what) {
    if (!holds) {
        std::fprintf(stderr, "invariant broken: %s\n", what);
        std::abort();
    }
}

bool valid_name(std::string_view host) {
    if (host.empty() || host.size() > kMaxHostBytes) return false;
    for (const char c : host) {
        const bool ok =
            (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '.' || c == '-' || c == '_';
        if (!ok) return false;
    }
    return true;
}

void check_authority(const Authority &authority) {
    require(authority.port != 0, "port is never 0");
    if (authority.ipv6) {
        bool ipv6 = false;
        require(normalize_host(authority.host, &ipv6) == authority.host && ipv6,
                "an IPv6 host is canonical");
    } else {
        require(valid_name(authority.host), "a name holds only the allowed bytes, lowercased");
    }
    const auto again = parse_authority(authority.text());
    require(std::holds_alternative<Authority>(again) && std::get<Authority>(again) == authority,
            "text() parses back to the same authority");
}

void check_boundary(std::string_view bytes) {
    const HeadBoundary whole = find_head_end(bytes);
    if (whole.state == HeadBoundary::State::complete) {
        require(whole.length >= 4 && whole.length <= kMaxHeadBytes && whole.length <= bytes.size(),
                "head length is in bounds");
        require(bytes.substr(whole.length - 4, 4) == "\r\n\r\n", "a head ends with CRLFCRLF");
    }
    // The same bytes arriving in pieces of 1..7 bytes.
    const std::size_t step =
        bytes.empty() ? 1 : 1 + static_cast<std::size_t>(static_cast<unsigned char>(bytes[0]) % 7);
    std::size_t scanned = 0;
    HeadBoundary piecewise;
    for (std::size_t have = 0; have < bytes.size();) {
        have = std::min(bytes.size(), have + step);
        piecewise = find_head_end(bytes.substr(0, have), scanned);
        if (piecewise.state != HeadBoundary::State::incomplete) break;
        require(piecewise.scanned <= have, "scan position within the buffer");
        scanned = piecewise.scanned;
    }
    if (!bytes.empty()) {
        require(piecewise.state == whole.state, "pieces decide as the whole does");
        if (whole.state == HeadBoundary::State::complete) {
            require(piecewise.length == whole.length, "pieces find the same end");
        }
    }
}

void check_parse(std::string_view bytes) {
    const HeadParse parse = parse_request_head(bytes);
    if (const auto *head = std::get_if<RequestHead>(&parse)) {
        require(head->length <= kMaxHeadBytes && head->length <= bytes.size(),
                "parsed head within bounds");
        require(head->headers.size() <= kMaxHeaderCount, "header count bounded");
        require(!head->method.empty() && head->method.size() <= kMaxMethodBytes, "method bounded");
        require(head->authority.has_value() == (head->method == "CONNECT"),
                "CONNECT and only CONNECT has an authority");
        if (head->authority) check_authority(*head->authority);
        const HeadBoundary boundary = find_head_end(bytes);
        require(boundary.state == HeadBoundary::State::complete && boundary.length == head->length,
                "the parser and the boundary scan agree on the end");
    } else {
        require(!describe(std::get<HeadFailure>(parse).error).empty(), "every error is named");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char *>(data), size);
    check_boundary(bytes);
    check_parse(bytes);
    const auto authority = parse_authority(bytes);
    if (const auto *a = std::get_if<Authority>(&authority)) check_authority(*a);
    bool ipv6 = false;
    if (const auto host = normalize_host(bytes, &ipv6)) {
        require(normalize_host(*host) == *host, "normalizing is idempotent");
    }
    return 0;
}

#ifdef TEA_FUZZ_REPLAY_MAIN
#include "support/fuzz_replay_main.hpp"
#endif
