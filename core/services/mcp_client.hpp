// The client side of a tool server's stdio transport (the Model Context Protocol): JSON-RPC 2.0
// requests written one a line to the server's stdin, responses read one a line from its stdout.
// The server is the evaluated program, so every line it writes is untrusted: each lie it tells is
// kept as a PeerEvent or as the outcome of the request it spoiled, never thrown and never allowed
// to hold the caller past the request's timeout or to grow memory past the line cap.
//
// Thread-safety: one McpClient is used by one thread at a time; requests are sent one after the
// other (the next only when the last has its outcome), which is all a probe needs.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/fd.hpp"

namespace tea::services {

struct McpLimits {
    // The longest line read from the server; a longer one is skipped to its newline, never held.
    std::size_t max_line_bytes = 4U << 20U;
    // How much of each line sent or received an exchange record keeps (records stay small
    // whatever the server prints); the caller still gets the whole parsed answer.
    std::size_t record_bytes = 64U << 10U;
    // The deepest nesting of arrays and objects a line may have: deeper lines are refused before
    // parsing, so a line of a million '[' cannot exhaust the stack of anything that walks it.
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
    closed,        // the server closed its stdout (or its stdin) before answering
};
std::string_view outcome_name(McpOutcome outcome);

// Something the server wrote that answered no request of ours.
enum class McpPeerEventKind : std::uint8_t {
    not_json = 1,    // a line that does not parse as JSON (or nests deeper than max_depth)
    not_jsonrpc,     // JSON, but no JSON-RPC 2.0 response, request or notification
    unknown_id,      // a response to an id this client never sent or no longer waits for
    line_too_long,   // a line longer than max_line_bytes, skipped
    server_message,  // a request or notification from the server (answered "method not found"
                     // when it is a request)
};
std::string_view peer_event_name(McpPeerEventKind kind);

struct McpPeerEvent {
    McpPeerEventKind kind = McpPeerEventKind::not_json;
    std::string line;  // the line, cut at McpLimits::record_bytes
    bool line_cut = false;
    std::size_t line_bytes = 0;  // its whole length
};

// One request (or notification) and how it ended, as the trial's records keep it.
struct McpExchange {
    std::int64_t id = 0;  // 0: a notification, which has no answer
    std::string method;
    std::string request;  // the line sent, cut at McpLimits::record_bytes
    bool request_cut = false;
    std::string response;  // the line answered, cut likewise ("" when none came)
    bool response_cut = false;
    McpOutcome outcome = McpOutcome::result;
    std::string detail;  // a sentence for every outcome but result
    std::int64_t elapsed_ms = 0;
};
nlohmann::json exchange_record(const McpExchange &exchange);
nlohmann::json peer_event_record(const McpPeerEvent &event);

struct McpReply {
    McpReply(McpOutcome how, nlohmann::json answer, std::string why)
        : outcome(how), value(std::move(answer)), detail(std::move(why)) {}
    McpOutcome outcome = McpOutcome::timed_out;
    nlohmann::json value;  // "result" or "error" of the response; null otherwise
    std::string detail;
};

class McpClient {
   public:
    // to_server: the write end of the server's stdin; from_server: the read end of its stdout.
    // Both are made non-blocking here.
    McpClient(UniqueFd to_server, UniqueFd from_server, McpLimits limits = {});

    // Sends `method` with `params` under the next id and waits at most `timeout` for its answer.
    McpReply request(std::string_view method, const nlohmann::json &params,
                     std::chrono::milliseconds timeout);
    // Sends a notification (no id, no answer).
    McpReply notify(std::string_view method, const nlohmann::json &params,
                    std::chrono::milliseconds timeout);
    // The protocol's opening: initialize, then notifications/initialized when it was answered.
    McpReply initialize(std::chrono::milliseconds timeout);
    // Once `fd` is readable (the call's end, exec::ConversationChannel::call_ended), a request
    // waits no longer: what the server already wrote is still read, then the request ends
    // `closed`, and so does every later one. -1: none.
    void stop_when_readable(int fd) { stop_fd_ = fd; }

    [[nodiscard]] const std::vector<McpExchange> &exchanges() const { return exchanges_; }
    [[nodiscard]] const std::vector<McpPeerEvent> &peer_events() const { return peer_events_; }
    [[nodiscard]] std::size_t peer_events_dropped() const { return peer_events_dropped_; }
    [[nodiscard]] bool closed() const { return closed_; }

   private:
    using Clock = std::chrono::steady_clock;
    enum class LineStatus : std::uint8_t { line, timed_out, closed };

    McpReply exchange(std::string_view method, const nlohmann::json &params, bool with_id,
                      std::chrono::milliseconds timeout);
    // False when the line could not be written whole by the deadline; `failure` then says why.
    bool write_line(const std::string &line, Clock::time_point deadline, McpReply &failure);
    LineStatus read_line(std::string &line, Clock::time_point deadline);
    // Whether `line` is the answer to `id`; anything else it is becomes a PeerEvent.
    bool is_answer(const std::string &line, std::int64_t id, Clock::time_point deadline,
                   nlohmann::json &message);
    void record_event(McpPeerEventKind kind, std::string_view line, std::size_t line_bytes);

    UniqueFd to_server_;
    UniqueFd from_server_;
    int stop_fd_ = -1;
    bool stopped_ = false;  // stop_fd_ was readable: the server's process has ended
    McpLimits limits_;
    std::int64_t next_id_ = 1;
    bool closed_ = false;
    std::string buffer_;        // read but not yet split into lines
    bool skipping_ = false;     // inside a line over the cap, dropped up to its newline
    std::size_t skipped_ = 0;   // bytes of that line so far
    std::string skipped_head_;  // its first record_bytes
    std::vector<McpExchange> exchanges_;
    std::vector<McpPeerEvent> peer_events_;
    std::size_t peer_events_dropped_ = 0;
};

}  // namespace tea::services
