// The host's end of the bridge into a started HTTP service (docs/services-bridge-design.md): a
// loopback TCP listener in the runtime's process whose every connection is carried to the relay's
// Unix socket in the call's directory, and from there by tea-bridge-relay to the service.
#pragma once

#include <cstdint>
#include <filesystem>
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

   private:
    HostListenerOptions options_;
    UniqueFd listener_;
    UniqueFd stop_;
    std::uint16_t port_ = 0;
    stream_relay::Counts counts_;
    std::thread carrier_;
};

}  // namespace tea::bridge
