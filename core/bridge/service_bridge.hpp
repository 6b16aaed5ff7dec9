// The bridge into one started service, as an HTTP call drives it (docs/services-bridge-design.md):
// wait for the service's port file, check that the port listens on loopback only inside the call's
// network, then listen on the host and carry each connection to the connection the relay in the
// bridge's directory hands over; or hand such a connection to the runtime's own client directly.
// Its record is the call record's "service" object.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tea/stream_relay.hpp>

#include "bridge/handed_fd.hpp"
#include "bridge/host_listener.hpp"
#include "util/fd.hpp"

namespace tea::bridge {

inline constexpr const char *kRelaySocketName = "bridge.sock";

struct BridgeRecord {
    std::optional<std::uint16_t> reported_port;  // what the port file held
    std::string bridge_address = "127.0.0.1";
    std::uint16_t bridge_port = 0;  // 0: the bridge never listened
    bool own_port = false;          // the host listener has the service's own port
    std::string started_at;         // UTC, when the host listener started
    std::string ended_at;           // UTC, when it stopped
    std::uint64_t connections = 0;
    std::uint64_t refused_at_limit = 0;  // times every slot was taken and clients waited
    std::uint64_t closed_idle = 0;
    std::optional<std::string> refusal;  // why the bridge never opened
};

// {"reportedPort", "bridgeAddress", "bridgePort", "ownPort", "startedAt", "endedAt",
//  "connections", "refusedAtLimit", "closedIdle", "refusal"}
nlohmann::json to_json(const BridgeRecord &record);

struct ServiceBridgeOptions {
    std::filesystem::path dir;  // the bridge's directory: the port file and the relay's socket
    pid_t pid = -1;             // the plan's process, or a process of the runtime above it
    // The call has a network namespace of its own (a confining backend): its listening sockets
    // are read from a descendant of `pid` in another namespace, never from the runtime's network.
    // false (opt-out): the service shares `pid`'s network.
    bool own_network = true;
    int call_ended = -1;  // readable once the call's process has ended; -1: none
    std::chrono::milliseconds patience{30'000};  // for the port file and the listening port
    stream_relay::Limits limits{256, std::chrono::milliseconds{60'000}};
};

class ServiceBridge {
   public:
    explicit ServiceBridge(ServiceBridgeOptions options);
    ServiceBridge(const ServiceBridge &) = delete;
    ServiceBridge &operator=(const ServiceBridge &) = delete;
    ~ServiceBridge();

    // Waits for the port, checks it, and listens: true when the bridge is open. False, with
    // record().refusal saying why, for a refused port file or address, nothing listening within
    // the patience, or the call's end first.
    bool start();
    [[nodiscard]] std::uint16_t host_port() const;
    // A connection to the service for the runtime's own client, no relay on its path: handed over
    // by the relay and checked (handed_socket.hpp). Empty, with `refusal` saying why, when the
    // bridge is not open, the hand-over is refused, or `timeout` or the call's end comes first.
    // Counted in the record's connections.
    HandedFd connect_service(std::chrono::milliseconds timeout, std::string &refusal);
    // Closes the listener and every connection; the record's counts are final afterwards.
    void stop();
    [[nodiscard]] BridgeRecord record() const;

   private:
    ServiceBridgeOptions options_;
    BridgeRecord record_;
    bridge_preface::Destination service_{};  // the service's loopback family and port
    UniqueFd call_network_;  // /proc/<pid>/ns/net of the call's network, held while open
    std::uint64_t direct_connections_ = 0;
    std::unique_ptr<HostListener> listener_;
};

}  // namespace tea::bridge
