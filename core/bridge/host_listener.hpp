// The host's end of the bridge into a started HTTP service (docs/services-bridge-design.md): a
// loopback TCP listener in the runtime's process. Each connection is carried either straight to
// the relay's connection to the service, which tea-bridge-relay hands over (one hop, when the
// call's network is given), or to the relay's Unix socket, and from there by the relay.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <tea/bridge_preface.hpp>
#include <tea/stream_relay.hpp>
#include <thread>

#include "util/fd.hpp"

namespace tea::bridge {

struct HostListenerOptions {
    // The port the service reported: listened on when the host has it free.
    std::uint16_t wanted_port = 0;
    // Where the relay connects each connection inside the namespace (written as its preface):
    // the service's loopback address and port. A port of 0 means wanted_port.
    bridge_preface::Destination service{};
    // The relay's socket inside the call's directory.
    std::filesystem::path relay_socket;
    stream_relay::Limits limits{256, std::chrono::milliseconds{60'000}};
    // An open /proc/<pid>/ns/net of the call's network, kept open by the caller while the
    // listener lives: the relay then hands each connection to the service over (checked to be
    // in this network, handed_socket.hpp) and the listener carries to it itself. -1: the relay
    // carries each connection's bytes itself (two hops).
    int call_network = -1;
};

// Listens on 127.0.0.1 from construction and carries connections on a thread of its own until
// stop() or destruction; throws tea::Error naming the address when it cannot listen.
class HostListener {
   public:
    explicit HostListener(HostListenerOptions options);
    HostListener(const HostListener &) = delete;
    HostListener &operator=(const HostListener &) = delete;
    HostListener(HostListener &&) = delete;
    HostListener &operator=(HostListener &&) = delete;
    ~HostListener();

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    // True when the listener has the service's own port, false when the system picked one.
    [[nodiscard]] bool own_port() const noexcept { return port_ == options_.wanted_port; }
    // Closes the listener and every connection it carries; the counts are final afterwards.
    void stop();
    // Read while it runs or after stop().
    [[nodiscard]] const stream_relay::Counts &counts() const noexcept { return counts_; }
    // Why the last hand-over was refused ("" when none was), read while it runs or after stop().
    [[nodiscard]] std::string last_refusal() const;

   private:
    // How long a client waits for the relay's hand-over when the limits set no wait.
    static constexpr std::chrono::milliseconds kHandOverWait{2000};
    // The carrier thread's loop when the relay hands its connections over.
    void carry_handed(const std::string &socket);

    HostListenerOptions options_;
    UniqueFd listener_;
    UniqueFd stop_;
    std::uint16_t port_ = 0;
    stream_relay::Counts counts_;
    mutable std::mutex refusal_mutex_;
    std::string last_refusal_;
    std::thread carrier_;
};

}  // namespace tea::bridge
