// libFuzzer target for the HTTP client's response parser (core/http/http_response_parser.hpp),
// which reads what an evaluated service answers. Besides "never crash", it checks that feeding
// the bytes in pieces gives the same state, reason and response as feeding them whole (a service
// chooses how its bytes arrive), and that a response read holds to the limits and the framing:
// the head within head_bytes and ending in a blank line without NUL or lone CR, no more headers
// than header_count, the body within body_bytes and as long as a Content-Length announced.
// Built with TEA_FUZZ_REPLAY_MAIN it is a plain program that replays a corpus, so any compiler
// exercises the same checks.
//
// An input is a byte of flags (bit 0: the request was HEAD; bit 1: small limits, so that the
// limits' paths are reached by short inputs), a byte that seeds the lengths of the pieces
// (1 to 16 bytes each), then the response's bytes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http/http_response_parser.hpp"

namespace {

using namespace tea::http;
using State = ResponseParser::State;

void require(bool holds, const char *what) {
    if (!holds) {
        std::fprintf(stderr, "invariant broken: %s\n", what);
        std::abort();
    }
}

std::string lowercase(std::string_view text) {
    std::string out(text);
    for (char &c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

void check_response(const ResponseParser &parser, const Limits &limits, bool head_request) {
    const Response &response = parser.response();
    const std::string &head = parser.raw_head();
    require(response.status >= 200 && response.status <= 599, "a final status");
    require(head.size() <= limits.head_bytes, "the head within its limit");
    require(head.size() >= 4 && head.ends_with("\r\n\r\n"), "the head ends in a blank line");
    require(head.find('\0') == std::string::npos, "no NUL in the head");
    for (std::size_t i = 0; i < head.size(); ++i) {
        if (head[i] == '\r') require(i + 1 < head.size() && head[i + 1] == '\n', "CR before LF");
        if (head[i] == '\n') require(i > 0 && head[i - 1] == '\r', "LF after CR");
    }
    require(response.headers.size() <= limits.header_count, "headers within their limit");
    require(response.body.size() <= limits.body_bytes, "the body within its limit");
    const bool bodiless = head_request || response.status == 204 || response.status == 304;
    if (bodiless) require(response.body.empty(), "no body where none is read");
    for (const Header &header : response.headers) {
        // Each value of a Content-Length list is the same number (or the response is refused).
        if (lowercase(header.name) == "content-length" && !bodiless) {
            require(std::strtoull(header.value.c_str(), nullptr, 10) == response.body.size(),
                    "the body as long as its Content-Length");
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    if (size < 2) return 0;
    const bool head_request = (data[0] & 1) != 0;
    Limits limits;
    if ((data[0] & 2) != 0) {
        limits.head_bytes = 200;
        limits.header_count = 4;
        limits.body_bytes = 64;
    }
    unsigned seed = data[1];
    const std::string_view bytes(reinterpret_cast<const char *>(data + 2), size - 2);

    ResponseParser whole(limits, head_request);
    whole.feed(bytes);
    whole.finish();

    ResponseParser pieces(limits, head_request);
    for (std::size_t at = 0; at < bytes.size();) {
        seed = seed * 1103515245u + 12345u;
        const std::size_t length = 1 + (seed >> 16) % 16;
        pieces.feed(bytes.substr(at, length));
        at += length;
    }
    pieces.finish();

    require(whole.state() == pieces.state(), "the same state whole and in pieces");
    require(whole.reason() == pieces.reason(), "the same reason whole and in pieces");
    require(whole.received_bytes() <= bytes.size(), "no more bytes received than given");
    require((whole.state() == State::malformed || whole.state() == State::tooLarge) ==
                !whole.reason().empty(),
            "a reason exactly for a refusal");
    if (whole.state() == State::done) {
        check_response(whole, limits, head_request);
        require(whole.response().body == pieces.response().body, "the same body");
        require(whole.raw_head() == pieces.raw_head(), "the same head");
        require(whole.response().headers.size() == pieces.response().headers.size(),
                "the same headers");
    }
    return 0;
}

#ifdef TEA_FUZZ_REPLAY_MAIN
#include "support/fuzz_replay_main.hpp"
#endif
