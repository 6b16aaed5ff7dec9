// The conversation of a toolServer probe's call: the runtime's MCP client (services/mcp_client)
// on the started server's stdio, or over HTTP through the bridge into it (bridged_service), the
// handshake, the probe's request and its comparison with the
// probe's expect, kept as the call record's "exchanges", "peerEvents" and "expect".
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "evaluation/bridged_service.hpp"
#include "evaluation/tool_server_probe.hpp"
#include "exec/call_runner.hpp"

namespace tea::evaluation {

class ToolServerCall {
   public:
    // `timeout`: each request's, unless the probe names its own; the entry's maxElapsedMs, which
    // also bounds the wait for an HTTP server's port. `http_path`: the endpoint of a server
    // spoken to over HTTP; none: over its stdio.
    ToolServerCall(const ToolServerProbe &probe, std::chrono::milliseconds timeout,
                   std::optional<std::string> http_path = std::nullopt);
    ToolServerCall(const ToolServerCall &) = delete;
    ToolServerCall &operator=(const ToolServerCall &) = delete;
    ToolServerCall(ToolServerCall &&) = delete;
    ToolServerCall &operator=(ToolServerCall &&) = delete;
    ~ToolServerCall() = default;

    // The runner's stdio conversation; its talk fills this object's records, afresh each time it
    // runs (a retried call runs it again). Valid while this object lives.
    exec::Conversation conversation();
    // An HTTP server's bridge, asked of the session; none for a server on stdio.
    [[nodiscard]] call::ServiceBridgeRequest bridge_request();
    // Once the call has returned, with its result (bridged_service.hpp).
    void settle(const exec::CallResult &result);
    [[nodiscard]] const std::optional<std::string> &failed_to_start() const;
    [[nodiscard]] bool infrastructure_error() const;

    // Once the call has returned: what the call record adds ("exchanges", "peerEvents",
    // "peerEventsDropped" and, for a probe with an expect, "expect"), and whether the expect was
    // met (true without one).
    [[nodiscard]] nlohmann::json record() const;
    [[nodiscard]] bool expect_met() const { return expect_met_; }

   private:
    void talk(const exec::ConversationChannel &channel);

    ToolServerProbe probe_;
    std::chrono::milliseconds timeout_;
    std::optional<std::string> http_path_;
    std::unique_ptr<BridgedService> service_;  // an HTTP server's only
    nlohmann::json exchanges_ = nlohmann::json::array();
    nlohmann::json peer_events_ = nlohmann::json::array();
    std::size_t peer_events_dropped_ = 0;
    nlohmann::json differences_ = nlohmann::json::array();
    bool expect_met_ = true;
};

}  // namespace tea::evaluation
