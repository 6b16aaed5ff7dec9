#include "evaluation/bridged_service.hpp"

#include "bridge/service_bridge.hpp"

namespace tea::evaluation {

BridgedService::BridgedService(std::chrono::milliseconds max_elapsed) : max_elapsed_{max_elapsed} {}

BridgedService::~BridgedService() = default;

call::ServiceBridgeRequest BridgedService::bridge_request() {
    return {true, [this](const std::filesystem::path &dir) { dir_ = dir; }};
}

std::optional<std::uint16_t> BridgedService::open(const exec::ConversationChannel &channel) {
    close();
    bridge_.reset();
    record_ = nullptr;
    failed_to_start_.reset();
    never_reported_ = false;
    infrastructure_error_ = false;
    // The call's own timeout ends a silent service first; settle() then tells that apart.
    bridge_ = std::make_unique<bridge::ServiceBridge>(
        bridge::ServiceBridgeOptions{.dir = dir_,
                                     .pid = channel.pid,
                                     // A confined service is looked for in its own network only, so
                                     // a port of the runtime's network never passes for its.
                                     .own_network = channel.confined,
                                     .call_ended = channel.call_ended,
                                     .patience = max_elapsed_ + std::chrono::seconds{5}});
    if (bridge_->start()) {
        record_ = bridge::to_json(bridge_->record());
        return bridge_->host_port();
    }
    const auto record = bridge_->record();
    failed_to_start_ = record.refusal.value_or("the bridge did not open");
    never_reported_ = !record.reported_port;
    record_ = bridge::to_json(record);
    return std::nullopt;
}

bridge::HandedFd BridgedService::connect(std::chrono::milliseconds timeout, std::string &refusal) {
    if (!bridge_) {
        refusal = "the bridge into the service is not open";
        return {};
    }
    return bridge_->connect_service(timeout, refusal);
}

void BridgedService::close() {
    if (bridge_) {
        bridge_->stop();
        record_ = bridge::to_json(bridge_->record());
    }
}

void BridgedService::settle(const exec::CallResult &result) {
    infrastructure_error_ = never_reported_ && result.timed_out;
    if (infrastructure_error_) {
        failed_to_start_ =
            "the service wrote no port in its port file within the entry's "
            "maxElapsedMs (" +
            std::to_string(max_elapsed_.count()) + " ms)";
        if (record_.is_object()) {
            record_["refusal"] = *failed_to_start_;
        }
    }
}

}  // namespace tea::evaluation
