// The MCP streamable HTTP transport, client side: each JSON-RPC message POSTed to the server's
// endpoint on a loopback port (core/http's exchange_tcp: one connection each, one deadline,
// bounded reads), answered by one JSON message or by an event stream read until the answer to our
// id; the session id the server hands out at initialize, and the agreed protocol revision, sent
// with every later request. Whatever the server answers that the transport does not take (a
// status other than 200 and 202, another content type, bytes that are no HTTP) becomes a peer
// event and ends the request `closed`, with the status in its record.
#pragma once

#include <cstdint>
#include <string>

#include "http/http_client.hpp"
#include "http/http_types.hpp"
#include "services/mcp_transport.hpp"

namespace tea::services {

// Where a tool server's HTTP endpoint is reached: the runtime's side of the bridge.
struct McpHttpEndpoint {
    std::string address = "127.0.0.1";  // a loopback address (exchange_tcp refuses any other)
    std::uint16_t port = 0;
    std::string path = "/mcp";  // origin-form, checked like an HTTP probe's path
};

class McpHttpTransport final : public McpTransport {
   public:
    // Throws std::invalid_argument for a path an HTTP request cannot carry (the caller's mistake:
    // the evaluation's check refuses it first).
    explicit McpHttpTransport(McpHttpEndpoint endpoint, http::Limits limits = {});

    [[nodiscard]] std::string_view name() const override { return "http"; }
    McpDelivery send(const std::string &message, bool awaits_answer, std::string_view what,
                     McpClock::time_point deadline, std::chrono::milliseconds timeout,
                     const McpInbox &inbox) override;
    void answer_server(const std::string &message, McpClock::time_point deadline,
                       const McpInbox &inbox) override;
    void opened(std::string_view protocol_version) override;

    [[nodiscard]] const std::string &session_id() const { return session_id_; }

   private:
    http::Request request_for(const std::string &message) const;
    // POSTs `message`; never throws (a request exchange_tcp refuses ends connectFailed).
    http::Exchange post(const std::string &message, McpClock::time_point deadline,
                        const http::BodyWatch &watch) const;
    // Takes the session id a response hands out, once; one the transport refuses to send back
    // is a peer event instead.
    void take_session(const http::Response &response, const McpInbox &inbox);

    McpHttpEndpoint endpoint_;
    http::Limits limits_;
    std::string session_id_;
    bool session_refused_ = false;  // the server's session id was refused (once, recorded)
    std::string protocol_version_;  // empty until the handshake is done
};

}  // namespace tea::services
