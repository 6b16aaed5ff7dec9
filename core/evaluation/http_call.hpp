// The conversation of an http probe's call: the bridge into the started service
// (bridged_service), the probe's request sent through it by the runtime's HTTP client
// (http/http_client), and the answer compared with the probe's expect, kept as the call record's
// "service", "exchanges" and "expect".
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "call/session.hpp"
#include "evaluation/bridged_service.hpp"
#include "evaluation/http_probe.hpp"
#include "exec/call_runner.hpp"

namespace tea::evaluation {

class HttpCall {
   public:
    // `max_elapsed`: the entry's maxElapsedMs, which bounds the wait for the service's port as
    // it bounds the call; the request's own timeout is the probe's timeoutMs, else the same.
    HttpCall(const HttpProbe &probe, std::chrono::milliseconds max_elapsed);

    // What the session is asked for: the bridge's directory. Valid while this object lives.
    call::ServiceBridgeRequest bridge_request() { return service_.bridge_request(); }
    // The runner's conversation (not over stdio: the service's output is captured as a
    // command's); its talk fills this object's records afresh each time it runs.
    exec::Conversation conversation();
    // Once the call has returned, with its result (bridged_service.hpp).
    void settle(const exec::CallResult &result);

    // "service", "exchanges" and, for a probe with an expect, "expect".
    [[nodiscard]] nlohmann::json record() const;
    [[nodiscard]] const std::optional<std::string> &failed_to_start() const {
        return service_.failed_to_start();
    }
    [[nodiscard]] bool infrastructure_error() const { return service_.infrastructure_error(); }

   private:
    void talk(const exec::ConversationChannel &channel);

    HttpProbe probe_;
    std::chrono::milliseconds timeout_;
    BridgedService service_;
    nlohmann::json exchanges_ = nlohmann::json::array();
    nlohmann::json differences_ = nlohmann::json::array();
    bool expect_met_ = true;
};

}  // namespace tea::evaluation
