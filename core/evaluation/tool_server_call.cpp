#include "evaluation/tool_server_call.hpp"

#include <fcntl.h>

#include <string>

#include "services/mcp_client.hpp"
#include "util/fd.hpp"

namespace tea::evaluation {
namespace {

using nlohmann::json;
using services::McpOutcome;

// The client owns what it is given; the runner closes its own ends once talk returns.
UniqueFd own_copy(int fd) {
    return UniqueFd{fd >= 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1};
}

}  // namespace

ToolServerCall::ToolServerCall(const ToolServerProbe &probe, std::chrono::milliseconds timeout)
    : probe_{probe},
      timeout_{probe.timeout_ms ? std::chrono::milliseconds{*probe.timeout_ms} : timeout} {
    if (probe_.expect) {
        // Until a conversation took place: a server that never started met nothing.
        expect_met_ = false;
        differences_.push_back("no conversation took place: the server did not start");
    }
}

exec::Conversation ToolServerCall::conversation() {
    return {true, [this](const exec::ConversationChannel &channel) { talk(channel); }};
}

void ToolServerCall::talk(const exec::ConversationChannel &channel) {
    exchanges_ = json::array();
    peer_events_ = json::array();
    differences_ = json::array();
    peer_events_dropped_ = 0;
    services::McpClient client{own_copy(channel.to_target), own_copy(channel.from_target)};
    client.stop_when_readable(channel.call_ended);
    // Every request but initialize needs the handshake first; the probe's own initialize is it.
    auto reply = client.initialize(timeout_);
    const bool handshake_answered = reply.outcome == McpOutcome::result;
    if (probe_.method != "initialize" && handshake_answered) {
        reply = client.request(probe_.method, probe_.params, timeout_);
    }
    for (const auto &exchange : client.exchanges()) {
        exchanges_.push_back(services::exchange_record(exchange));
    }
    for (const auto &event : client.peer_events()) {
        peer_events_.push_back(services::peer_event_record(event));
    }
    peer_events_dropped_ = client.peer_events_dropped();
    if (!probe_.expect) {
        return;
    }
    if (probe_.method != "initialize" && !handshake_answered) {
        differences_.push_back("the request was never sent: the handshake ended " +
                               std::string{services::outcome_name(reply.outcome)} +
                               (reply.detail.empty() ? "" : " (" + reply.detail + ")"));
    } else {
        const bool answered =
            reply.outcome == McpOutcome::result || reply.outcome == McpOutcome::error_object;
        for (auto &d : expect_differences(*probe_.expect, answered,
                                          reply.outcome == McpOutcome::error_object, reply.value)) {
            differences_.push_back(std::move(d));
        }
    }
    expect_met_ = differences_.empty();
}

json ToolServerCall::record() const {
    json out{{"exchanges", exchanges_},
             {"peerEvents", peer_events_},
             {"peerEventsDropped", peer_events_dropped_}};
    if (probe_.expect) {
        out["expect"] = {{"met", expect_met_}, {"differences", differences_}};
    }
    return out;
}

}  // namespace tea::evaluation
