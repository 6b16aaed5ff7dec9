// The client side of a tool server's Model Context Protocol: JSON-RPC 2.0 requests under
// increasing ids, the initialize handshake, and every answer, error, timeout and stray message
// kept for the records. How messages travel is its transport's (mcp_transport.hpp): the stdio
// lines of a started process, or the streamable HTTP transport of a server reached on a loopback
// port. The server is the evaluated program, so everything it says is untrusted: each lie it
// tells is kept as a PeerEvent or as the outcome of the request it spoiled, never thrown and
// never allowed to hold the caller past the request's timeout or to grow memory past the limits.
//
// Thread-safety: one McpClient is used by one thread at a time; requests are sent one after the
// other (the next only when the last has its outcome), which is all a probe needs.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "services/mcp_transport.hpp"
#include "services/mcp_types.hpp"
#include "util/fd.hpp"

namespace tea::services {

struct McpReply {
    McpReply(McpOutcome how, nlohmann::json answer, std::string why)
        : outcome(how), value(std::move(answer)), detail(std::move(why)) {}
    McpOutcome outcome = McpOutcome::timed_out;
    nlohmann::json value;  // "result" or "error" of the response; null otherwise
    std::string detail;
};

class McpClient {
   public:
    // Over the stdio transport. to_server: the write end of the server's stdin; from_server: the
    // read end of its stdout. Both are made non-blocking here.
    McpClient(UniqueFd to_server, UniqueFd from_server, McpLimits limits = {});
    // Over any transport (mcp_http_transport.hpp for a server's HTTP endpoint).
    explicit McpClient(std::unique_ptr<McpTransport> transport, McpLimits limits = {});

    // Sends `method` with `params` under the next id and waits at most `timeout` for its answer.
    McpReply request(std::string_view method, const nlohmann::json &params,
                     std::chrono::milliseconds timeout);
    // Sends a notification (no id, no answer).
    McpReply notify(std::string_view method, const nlohmann::json &params,
                    std::chrono::milliseconds timeout);
    // The protocol's opening: initialize, then notifications/initialized when it was answered.
    McpReply initialize(std::chrono::milliseconds timeout);
    // Once `fd` is readable (the call's end, exec::ConversationChannel::call_ended), a request
    // waits no longer: what the server already sent is still read, then the request ends
    // `closed`, and so does every later one, on either transport. -1: none.
    void stop_when_readable(int fd) { transport_->stop_when_readable(fd); }

    [[nodiscard]] const std::vector<McpExchange> &exchanges() const { return exchanges_; }
    [[nodiscard]] const std::vector<McpPeerEvent> &peer_events() const { return peer_events_; }
    [[nodiscard]] std::size_t peer_events_dropped() const { return peer_events_dropped_; }
    [[nodiscard]] bool closed() const { return transport_->closed(); }

   private:
    McpReply exchange(std::string_view method, const nlohmann::json &params, bool with_id,
                      std::chrono::milliseconds timeout);
    // Whether `text` is the answer to `id` (0: no answer is awaited); anything else it is
    // becomes a PeerEvent.
    bool is_answer(const std::string &text, std::int64_t id, McpClock::time_point deadline,
                   const McpInbox &inbox, nlohmann::json &message);
    void record_event(McpPeerEventKind kind, std::string_view text, std::size_t bytes);

    std::unique_ptr<McpTransport> transport_;
    McpLimits limits_;
    std::int64_t next_id_ = 1;
    std::vector<McpExchange> exchanges_;
    std::vector<McpPeerEvent> peer_events_;
    std::size_t peer_events_dropped_ = 0;
};

}  // namespace tea::services
