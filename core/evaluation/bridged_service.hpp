// The bridge into the service a probe's call started (an http entry's, or a tool server's over
// HTTP), as the call's conversation opens and closes it: the session's bridge directory, the
// service's port awaited and checked by bridge::ServiceBridge, the host port to talk to, and the
// call record's "service". A service silent until the call's timeout is told apart, once the
// call has returned, as the harness's failure rather than the service's.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "bridge/handed_fd.hpp"
#include "call/session.hpp"
#include "exec/call_runner.hpp"
#include "util/fd.hpp"

namespace tea::bridge {
class ServiceBridge;
}  // namespace tea::bridge

namespace tea::evaluation {

class BridgedService {
   public:
    // `max_elapsed`: the entry's maxElapsedMs, which bounds the wait for the port.
    explicit BridgedService(std::chrono::milliseconds max_elapsed);
    BridgedService(const BridgedService &) = delete;
    BridgedService &operator=(const BridgedService &) = delete;
    BridgedService(BridgedService &&) = delete;
    BridgedService &operator=(BridgedService &&) = delete;
    ~BridgedService();

    // What the session is asked for; the directory is handed back before the target starts.
    // Valid while this object lives.
    call::ServiceBridgeRequest bridge_request();
    // From the conversation's thread: waits for the service's port and opens the bridge. The
    // host port to connect to, or nullopt with failed_to_start() saying why.
    std::optional<std::uint16_t> open(const exec::ConversationChannel &channel);
    // A connection to the service for the runtime's own client, handed over by the relay (no
    // relay on its path), or empty with `refusal` saying why (bridge::ServiceBridge).
    bridge::HandedFd connect(std::chrono::milliseconds timeout, std::string &refusal);
    // Stops the bridge (every connection closed); its record is final afterwards.
    void close();
    // Once the call has returned, with its result.
    void settle(const exec::CallResult &result);

    [[nodiscard]] const nlohmann::json &record() const { return record_; }
    [[nodiscard]] const std::optional<std::string> &failed_to_start() const {
        return failed_to_start_;
    }
    // The service never reported its port before the call's timeout: no verdict on the target
    // may rest on the call.
    [[nodiscard]] bool infrastructure_error() const { return infrastructure_error_; }

   private:
    std::chrono::milliseconds max_elapsed_;
    std::filesystem::path dir_;
    std::unique_ptr<bridge::ServiceBridge> bridge_;
    nlohmann::json record_ = nullptr;
    std::optional<std::string> failed_to_start_;
    bool never_reported_ = false;
    bool infrastructure_error_ = false;
};

}  // namespace tea::evaluation
