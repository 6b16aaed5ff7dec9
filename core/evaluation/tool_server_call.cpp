#include "evaluation/tool_server_call.hpp"

#include <fcntl.h>

#include <string>

#include "services/mcp_client.hpp"
#include "services/mcp_http_transport.hpp"
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

ToolServerCall::ToolServerCall(const ToolServerProbe &probe, std::chrono::milliseconds timeout,
                               std::optional<std::string> http_path)
    : probe_{probe},
      timeout_{probe.timeout_ms ? std::chrono::milliseconds{*probe.timeout_ms} : timeout},
      http_path_{std::move(http_path)},
      service_{http_path_ ? std::make_unique<BridgedService>(timeout) : nullptr} {
    if (probe_.expect) {
        // Until a conversation took place: a server that never started met nothing.
        expect_met_ = false;
        differences_.push_back("no conversation took place: the server did not start");
    }
}

exec::Conversation ToolServerCall::conversation() {
    return {!service_, [this](const exec::ConversationChannel &channel) { talk(channel); }};
}

call::ServiceBridgeRequest ToolServerCall::bridge_request() {
    return service_ ? service_->bridge_request() : call::ServiceBridgeRequest{};
}

void ToolServerCall::settle(const exec::CallResult &result) {
    if (!service_) {
        return;
    }
    service_->settle(result);
    if (service_->infrastructure_error() && probe_.expect) {
        differences_ = json::array({"no conversation took place: " + *service_->failed_to_start()});
    }
}

const std::optional<std::string> &ToolServerCall::failed_to_start() const {
    static const std::optional<std::string> none;
    return service_ ? service_->failed_to_start() : none;
}

bool ToolServerCall::infrastructure_error() const {
    return service_ && service_->infrastructure_error();
}

void ToolServerCall::talk(const exec::ConversationChannel &channel) {
    exchanges_ = json::array();
    peer_events_ = json::array();
    differences_ = json::array();
    peer_events_dropped_ = 0;
    expect_met_ = !probe_.expect;
    std::optional<services::McpClient> over;
    if (service_) {
        const auto port = service_->open(channel);
        if (!port) {
            if (probe_.expect) {
                differences_.push_back("no conversation took place: " +
                                       *service_->failed_to_start());
            }
            return;
        }
        over.emplace(std::make_unique<services::McpHttpTransport>(
            services::McpHttpEndpoint{"127.0.0.1", *port, *http_path_}));
    } else {
        over.emplace(own_copy(channel.to_target), own_copy(channel.from_target));
    }
    auto &client = *over;
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
    if (service_) {
        service_->close();
    }
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
    if (service_) {
        out["service"] = service_->record();
    }
    return out;
}

}  // namespace tea::evaluation
