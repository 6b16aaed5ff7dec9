// A small HTTP/1.1 client for the probes of an HTTP entry: one request on one connection, one
// response read within a deadline and within limits. The service it talks to is the evaluated
// program, so everything it answers is hostile input: the client never throws for anything the
// peer does, never holds more than Limits, and never waits past the deadline. libcurl is not used
// because every `exec` would pay its TLS and protocol libraries' load time for one loopback
// request.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "http/http_types.hpp"

namespace tea::http {

enum class Outcome { response, timedOut, closed, malformed, tooLarge, connectFailed };

struct Exchange {
    Outcome outcome = Outcome::closed;
    std::string sentence;      // every outcome but response: what happened, in words
    Response response;         // when outcome == response
    std::string raw_head;      // the bytes of the response head as received (for the record)
    std::string request_head;  // the request's head as sent (for the record)
    std::chrono::milliseconds elapsed{0};
    bool ended_by_watch = false;  // a BodyWatch ended the read before the response's end
    bool stopped = false;         // the caller's stop descriptor ended it (outcome closed)
};

// Looks at a response whose head is read while its body is still arriving (an event stream that
// may stay open after what the caller waits for): true ends the exchange there, with outcome
// response and the body read so far. Called after each read that leaves the response unfinished.
using BodyWatch = std::function<bool(const Response &so_far)>;

// Sends `request` on a connected stream socket (adding Host: <host>, Content-Length when there is
// a body or the method is POST, PUT or PATCH, and Connection: close) and reads one response (1xx
// interim responses skipped; framed by Transfer-Encoding: chunked, else Content-Length, else until
// close; no body for HEAD, 204, 304), all within `timeout`. Reads and writes without blocking and
// without SIGPIPE, leaving the descriptor's flags as they were; the caller closes `fd` (after
// tooLarge, the rest of the response is left unread). Throws std::invalid_argument only for a
// request or host that fails the checks below (the caller's mistake, not the peer's).
Exchange exchange(int fd, const Request &request, const std::string &host,
                  std::chrono::milliseconds timeout, const Limits &limits = {});

// Connects to `address` (a loopback address, 127.0.0.0/8 or ::1), port `port`, then exchange()
// with Host: address:port; connectFailed with errno's words, timedOut when the connection is not
// accepted before the deadline. The connection is closed before it returns. `watch`, when set,
// may end the read early (BodyWatch). Once `stop_fd` (-1: none) is readable, the exchange waits
// no longer: outcome closed, `stopped` set.
Exchange exchange_tcp(const std::string &address, std::uint16_t port, const Request &request,
                      std::chrono::milliseconds timeout, const Limits &limits = {},
                      const BodyWatch &watch = {}, int stop_fd = -1);

// The record's spelling: "response", "timedOut", "closed", "malformed", "tooLarge",
// "connectFailed".
std::string to_string(Outcome outcome);

// The probe side's checks, used by `check`: nullopt when fine, else the sentence.
std::optional<std::string> invalid_method(const std::string &method);
// '/' first, visible ASCII only, at most 8 KiB.
std::optional<std::string> invalid_target(const std::string &target);
// A token name, no CR, LF or NUL in the value, and not a header the client sets itself.
std::optional<std::string> invalid_header(const Header &header);

// Where the exchange's bytes are cut in its record.
inline constexpr std::size_t kRecordCutBytes = std::size_t{64} * 1024;

// The exchange's record for the call record: "protocol": "http", method, path, status (null
// without a response), requestHead, requestBody, responseHead, responseBody, each cut at
// kRecordCutBytes on a UTF-8 boundary, with requestCut and responseCut and the full lengths
// (requestBytes, responseBytes), outcome, sentence (null for a response) and ms.
nlohmann::json exchange_record(const Request &request, const Exchange &exchange);

}  // namespace tea::http
