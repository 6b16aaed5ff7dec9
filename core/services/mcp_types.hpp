// What the tool-server client (mcp_client.hpp) and its transports share: the limits on what a
// server may make the runtime hold, how a request ended, what the server said that answered
// nothing, and the records of both as a trial's call record keeps them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace tea::services {

struct McpLimits {
    // The longest line read from a stdio server; a longer one is skipped to its newline, never
    // held. (An HTTP server's answers are bounded by core/http's Limits instead.)
    std::size_t max_line_bytes = 4U << 20U;
    // How much of each message sent or received an exchange record keeps (records stay small
    // whatever the server says); the caller still gets the whole parsed answer.
    std::size_t record_bytes = 64U << 10U;
    // The deepest nesting of arrays and objects a message may have: deeper ones are refused
    // before parsing, so a million '[' cannot exhaust the stack of anything that walks it.
    std::size_t max_depth = 256;
    // The most peer events kept; later ones are only counted (peer_events_dropped).
    std::size_t max_peer_events = 1000;
};

// How one request ended. Starts at 1 so a zeroed value is never a valid outcome.
enum class McpOutcome : std::uint8_t {
    result = 1,    // a response with "result" for this request's id
    error_object,  // a response with "error" for this request's id
    timed_out,     // no response within the request's timeout (or the request could not be
                   // written within it: a server that reads nothing)
    closed,        // the server ended (closed its stdio, or ended an HTTP exchange, refused
                   // the connection or answered with a status other than 200 and 202) before
                   // answering
};
std::string_view outcome_name(McpOutcome outcome);

// Something the server said that answered no request of ours.
enum class McpPeerEventKind : std::uint8_t {
    not_json = 1,    // a message that does not parse as JSON (or nests deeper than max_depth),
                     // or a line of an event stream that is no event field
    not_jsonrpc,     // JSON, but no JSON-RPC 2.0 response, request or notification
    unknown_id,      // a response to an id this client never sent or no longer waits for
    line_too_long,   // a stdio line longer than max_line_bytes, skipped
    server_message,  // a request or notification from the server (answered "method not found"
                     // when it is a request)
    not_http,        // bytes that are no HTTP response core/http takes (malformed, too large)
    bad_response,    // an HTTP response the transport does not take: a status other than 200 and
                     // 202, a 202 to a request or a 200 to a notification, a content type that is
                     // neither JSON nor an event stream, a session id outside visible ASCII
};
std::string_view peer_event_name(McpPeerEventKind kind);

struct McpPeerEvent {
    McpPeerEventKind kind = McpPeerEventKind::not_json;
    std::string line;  // what was said, cut at McpLimits::record_bytes
    bool line_cut = false;
    std::size_t line_bytes = 0;  // its whole length
};

// One request (or notification) and how it ended, as the trial's records keep it.
struct McpExchange {
    std::string_view transport;  // "stdio" or "http"
    std::int64_t id = 0;         // 0: a notification, which has no answer
    std::string method;
    std::string request;  // the message sent, cut at McpLimits::record_bytes
    bool request_cut = false;
    std::string response;  // the message that answered, cut likewise ("" when none came)
    bool response_cut = false;
    McpOutcome outcome = McpOutcome::result;
    std::string detail;   // a sentence for every outcome but result
    int http_status = 0;  // the HTTP transport's status; 0: none (stdio, or no response)
    std::int64_t elapsed_ms = 0;
};
nlohmann::json exchange_record(const McpExchange &exchange);
nlohmann::json peer_event_record(const McpPeerEvent &event);

// The first `limit` bytes of `text`, backed off to a UTF-8 character boundary so a record never
// holds half a character; and whether anything was cut.
std::pair<std::string, bool> cut_for_record(std::string_view text, std::size_t limit);

}  // namespace tea::services
