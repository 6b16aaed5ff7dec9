// The MCP stdio transport: JSON-RPC messages written one a line to the server's stdin, read one a
// line from its stdout, over the pipes of a process someone else started. A line over the cap is
// dropped as it arrives, never held whole; a write to a server that reads nothing waits no longer
// than the request's deadline.
#pragma once

#include <string>

#include "services/mcp_transport.hpp"
#include "util/fd.hpp"

namespace tea::services {

class McpStdioTransport final : public McpTransport {
   public:
    // to_server: the write end of the server's stdin; from_server: the read end of its stdout.
    // Both are made non-blocking here.
    McpStdioTransport(UniqueFd to_server, UniqueFd from_server, const McpLimits &limits);

    [[nodiscard]] std::string_view name() const override { return "stdio"; }
    McpDelivery send(const std::string &message, bool awaits_answer, std::string_view what,
                     McpClock::time_point deadline, std::chrono::milliseconds timeout,
                     const McpInbox &inbox) override;
    void answer_server(const std::string &message, McpClock::time_point deadline,
                       const McpInbox &inbox) override;
    [[nodiscard]] bool closed() const override { return closed_ || was_stopped(); }

   private:
    enum class LineStatus : std::uint8_t { line, timed_out, closed };

    // False when the line could not be written whole by the deadline; `failure` then says why.
    bool write_line(const std::string &line, McpClock::time_point deadline, McpDelivery &failure);
    LineStatus read_line(std::string &line, McpClock::time_point deadline, const McpInbox &inbox);

    UniqueFd to_server_;
    UniqueFd from_server_;
    McpLimits limits_;
    bool closed_ = false;
    std::string buffer_;        // read but not yet split into lines
    bool skipping_ = false;     // inside a line over the cap, dropped up to its newline
    std::size_t skipped_ = 0;   // bytes of that line so far
    std::string skipped_head_;  // its first record_bytes
};

}  // namespace tea::services
