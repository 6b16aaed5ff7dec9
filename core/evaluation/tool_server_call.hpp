// The conversation of a toolServer probe's call: the runtime's MCP client (services/mcp_client)
// on the started server's stdio, the handshake, the probe's request and its comparison with the
// probe's expect, kept as the call record's "exchanges", "peerEvents" and "expect".
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>

#include "evaluation/tool_server_probe.hpp"
#include "exec/call_runner.hpp"

namespace tea::evaluation {

class ToolServerCall {
   public:
    // `timeout`: each request's, unless the probe names its own.
    ToolServerCall(const ToolServerProbe &probe, std::chrono::milliseconds timeout);
    ToolServerCall(const ToolServerCall &) = delete;
    ToolServerCall &operator=(const ToolServerCall &) = delete;
    ToolServerCall(ToolServerCall &&) = delete;
    ToolServerCall &operator=(ToolServerCall &&) = delete;
    ~ToolServerCall() = default;

    // The runner's stdio conversation; its talk fills this object's records, afresh each time it
    // runs (a retried call runs it again). Valid while this object lives.
    exec::Conversation conversation();

    // Once the call has returned: what the call record adds ("exchanges", "peerEvents",
    // "peerEventsDropped" and, for a probe with an expect, "expect"), and whether the expect was
    // met (true without one).
    [[nodiscard]] nlohmann::json record() const;
    [[nodiscard]] bool expect_met() const { return expect_met_; }

   private:
    void talk(const exec::ConversationChannel &channel);

    ToolServerProbe probe_;
    std::chrono::milliseconds timeout_;
    nlohmann::json exchanges_ = nlohmann::json::array();
    nlohmann::json peer_events_ = nlohmann::json::array();
    std::size_t peer_events_dropped_ = 0;
    nlohmann::json differences_ = nlohmann::json::array();
    bool expect_met_ = true;
};

}  // namespace tea::evaluation
