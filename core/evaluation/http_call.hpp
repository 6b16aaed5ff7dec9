// The conversation of an http probe's call: the bridge into the started service
// (bridge/service_bridge: its port file read, its address checked, the host listener opened), the
// probe's request sent through it by the runtime's HTTP client (http/http_client), and the answer
// compared with the probe's expect, kept as the call record's "service", "exchanges" and
// "expect".
#pragma once

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "call/session.hpp"
#include "evaluation/http_probe.hpp"
#include "exec/call_runner.hpp"

namespace tea::evaluation {

class HttpCall {
   public:
    // `max_elapsed`: the entry's maxElapsedMs, which bounds the wait for the service's port as
    // it bounds the call; the request's own timeout is the probe's timeoutMs, else the same.
    HttpCall(const HttpProbe &probe, std::chrono::milliseconds max_elapsed);
    HttpCall(const HttpCall &) = delete;
    HttpCall &operator=(const HttpCall &) = delete;
    HttpCall(HttpCall &&) = delete;
    HttpCall &operator=(HttpCall &&) = delete;
    ~HttpCall() = default;

    // What the session is asked for: the bridge's directory, handed to this object before the
    // target starts. Valid while this object lives.
    call::ServiceBridgeRequest bridge_request();
    // The runner's conversation (not over stdio: the service's output is captured as a
    // command's); its talk fills this object's records afresh each time it runs.
    exec::Conversation conversation();

    // Once the call has returned: "service", "exchanges" and, for a probe with an expect,
    // "expect".
    [[nodiscard]] nlohmann::json record() const;
    [[nodiscard]] bool expect_met() const { return expect_met_; }
    // Why the service never got the request, when it did not: its refusal or its silence.
    [[nodiscard]] const std::optional<std::string> &failed_to_start() const {
        return failed_to_start_;
    }
    // Once the call has returned, with its result: a service that never reported its port
    // before the call's timeout (its maxElapsedMs) is the harness's failure to reach the target at
    // all, not a verdict on it, and its record says so.
    void settle(const exec::CallResult &result);
    [[nodiscard]] bool infrastructure_error() const { return infrastructure_error_; }

   private:
    void talk(const exec::ConversationChannel &channel);

    HttpProbe probe_;
    std::chrono::milliseconds max_elapsed_;
    std::chrono::milliseconds timeout_;
    std::filesystem::path dir_;
    nlohmann::json service_ = nullptr;
    nlohmann::json exchanges_ = nlohmann::json::array();
    nlohmann::json differences_ = nlohmann::json::array();
    bool expect_met_ = true;
    bool never_reported_ = false;  // the bridge did not open and no port was ever read
    bool infrastructure_error_ = false;
    std::optional<std::string> failed_to_start_;
};

}  // namespace tea::evaluation
