// How the tool-server client's messages reach the server and its answers come back: the MCP stdio
// transport (mcp_stdio_transport.hpp) or the streamable HTTP transport (mcp_http_transport.hpp).
// A transport frames and carries messages; what they mean (ids, answers, peer events, records)
// is the client's (mcp_client.hpp).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "services/mcp_types.hpp"

namespace tea::services {

using McpClock = std::chrono::steady_clock;

// What the server says while a request waits, handed to the client as it comes.
struct McpInbox {
    // Each message the server sends (a stdio line, a JSON body, an event's data): true when it
    // is the answer awaited, which ends the wait.
    std::function<bool(const std::string &message)> message;
    // What the server sends that is no message at all: the kind, the text, its whole length.
    std::function<void(McpPeerEventKind kind, std::string_view text, std::size_t bytes)> event;
};

// How a send ended.
struct McpDelivery {
    // result: the inbox took the answer, or (a message awaiting none) the server accepted it;
    // timed_out or closed otherwise, with `detail` saying what happened.
    McpOutcome outcome = McpOutcome::result;
    std::string detail;
    int http_status = 0;  // the HTTP transport's status (0: none)
};

class McpTransport {
   public:
    McpTransport() = default;
    McpTransport(const McpTransport &) = delete;
    McpTransport &operator=(const McpTransport &) = delete;
    McpTransport(McpTransport &&) = delete;
    McpTransport &operator=(McpTransport &&) = delete;
    virtual ~McpTransport() = default;

    // "stdio" or "http", as the records spell it.
    [[nodiscard]] virtual std::string_view name() const = 0;

    // Sends one JSON-RPC message. With `awaits_answer`, hands whatever the server sends to
    // `inbox` until the inbox takes the answer, `deadline` passes or the server ends. `what`
    // names the request in sentences ("tools/list (id 2)"); `timeout` is the deadline's length.
    // Never throws for anything the server does.
    virtual McpDelivery send(const std::string &message, bool awaits_answer, std::string_view what,
                             McpClock::time_point deadline, std::chrono::milliseconds timeout,
                             const McpInbox &inbox) = 0;

    // Sends the client's answer to a request of the server's own, by `deadline` if at all: a
    // failure shows in the next send, or as a peer event through `inbox`.
    virtual void answer_server(const std::string &message, McpClock::time_point deadline,
                               const McpInbox &inbox) = 0;

    // The handshake is done and the server agreed to `protocol_version`.
    virtual void opened(std::string_view protocol_version) { static_cast<void>(protocol_version); }

    // True once the transport can carry nothing more (a stdio server closed its end, or the call
    // ended).
    [[nodiscard]] virtual bool closed() const { return stopped_; }

    // Once `fd` is readable (the call's end), a send waits no longer and ends `closed`, and so
    // does every later one. -1: none.
    void stop_when_readable(int fd) { stop_fd_ = fd; }

   protected:
    [[nodiscard]] int stop_fd() const { return stop_fd_; }
    // Says the stop was seen: the server's process has ended.
    void stopped() { stopped_ = true; }
    [[nodiscard]] bool was_stopped() const { return stopped_; }

   private:
    int stop_fd_ = -1;
    bool stopped_ = false;
};

}  // namespace tea::services
