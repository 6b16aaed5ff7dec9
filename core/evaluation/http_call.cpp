#include "evaluation/http_call.hpp"

#include <string>

#include "bridge/service_bridge.hpp"
#include "http/http_client.hpp"

namespace tea::evaluation {
using nlohmann::json;

HttpCall::HttpCall(const HttpProbe &probe, std::chrono::milliseconds max_elapsed)
    : probe_{probe},
      max_elapsed_{max_elapsed},
      timeout_{probe.timeout_ms ? std::chrono::milliseconds{*probe.timeout_ms} : max_elapsed} {
    if (probe_.expect) {
        // Until a conversation took place: a service that never started met nothing.
        expect_met_ = false;
        differences_.push_back("no request was sent: the service did not start");
    }
}

call::ServiceBridgeRequest HttpCall::bridge_request() {
    return {true, [this](const std::filesystem::path &dir) { dir_ = dir; }};
}

exec::Conversation HttpCall::conversation() {
    return {false, [this](const exec::ConversationChannel &channel) { talk(channel); }};
}

void HttpCall::talk(const exec::ConversationChannel &channel) {
    service_ = nullptr;
    exchanges_ = json::array();
    differences_ = json::array();
    never_reported_ = false;
    infrastructure_error_ = false;
    failed_to_start_.reset();
    expect_met_ = !probe_.expect;
    // The call's own timeout ends a silent service first; settle() then tells that apart.
    bridge::ServiceBridge bridge{{.dir = dir_,
                                  .pid = channel.pid,
                                  .call_ended = channel.call_ended,
                                  .patience = max_elapsed_ + std::chrono::seconds{5}}};
    if (!bridge.start()) {
        const auto record = bridge.record();
        failed_to_start_ = record.refusal.value_or("the bridge did not open");
        never_reported_ = !record.reported_port;
        service_ = bridge::to_json(record);
        if (probe_.expect) {
            differences_.push_back("no request was sent: " + *failed_to_start_);
        }
        return;
    }
    // Through the host listener, as any client of the service would come.
    const auto exchange =
        http::exchange_tcp("127.0.0.1", bridge.host_port(), probe_.request, timeout_);
    exchanges_.push_back(http::exchange_record(probe_.request, exchange));
    bridge.stop();
    service_ = bridge::to_json(bridge.record());
    if (!probe_.expect) {
        return;
    }
    if (exchange.outcome != http::Outcome::response) {
        differences_.push_back("no answer: " + http::to_string(exchange.outcome) + " (" +
                               exchange.sentence + ")");
    } else {
        for (auto &d : http_differences(*probe_.expect, exchange.response)) {
            differences_.push_back(std::move(d));
        }
    }
    expect_met_ = differences_.empty();
}

void HttpCall::settle(const exec::CallResult &result) {
    infrastructure_error_ = never_reported_ && result.timed_out;
    if (!infrastructure_error_) {
        return;
    }
    const auto sentence =
        "the service wrote no port in its port file within the entry's "
        "maxElapsedMs (" +
        std::to_string(max_elapsed_.count()) + " ms)";
    failed_to_start_ = sentence;
    if (service_.is_object()) {
        service_["refusal"] = sentence;
    }
    if (probe_.expect) {
        differences_ = json::array({"no request was sent: " + sentence});
    }
}

json HttpCall::record() const {
    json out{{"service", service_}, {"exchanges", exchanges_}};
    if (probe_.expect) {
        out["expect"] = {{"met", expect_met_}, {"differences", differences_}};
    }
    return out;
}

}  // namespace tea::evaluation
