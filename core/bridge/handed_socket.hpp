// The relay's connection to the service, handed to the host over the relay's Unix socket
// (docs/services-bridge-design.md): the host asks with a hand-over preface, receives the
// descriptor (SCM_RIGHTS) and carries its client's bytes to it itself, or a probe of the runtime
// talks over it directly. The descriptor comes from a process of the target's identity, so it is
// the target's until checked: exactly one, a socket, TCP over IPv4 or IPv6 as asked, in the call's
// network namespace, connected to the service's loopback address at the port asked. Anything else
// is refused, closed, and never read from or written to.
#pragma once

#include <chrono>
#include <string>
#include <tea/bridge_preface.hpp>
#include <tea/stream_relay.hpp>

#include "bridge/handed_fd.hpp"
#include "util/fd.hpp"

namespace tea::bridge {

// What a handed descriptor must be.
struct ServiceEnd {
    // The service's loopback address family and port (hand_over is set when asking).
    bridge_preface::Destination destination{};
    // An open /proc/<pid>/ns/net of a process in the call's network: the socket's network
    // namespace must be this one. Held open by the caller, so its inode cannot be reused.
    int network = -1;
};

// One descriptor from the relay's answer on `unix_fd` (non-blocking), close-on-exec.
struct Received {
    enum class State { waiting, received, refused };
    State state = State::waiting;
    HandedFd fd;          // when received
    std::string refusal;  // when refused
};
Received receive_one_descriptor(int unix_fd);

// Where a received descriptor stands against `end`: its connect may still be under way.
struct SocketCheck {
    enum class State { connecting, connected, refused };
    State state = State::refused;
    std::string refusal;
};
SocketCheck check_service_socket(int fd, const ServiceEnd &end);

// One hand-over, advanced without blocking: the relay's socket connected and the preface written,
// the descriptor received and checked, its connect completed.
class HandOver {
   public:
    enum class State { waiting, ready, refused };

    HandOver(std::string relay_socket, const ServiceEnd &end);
    // As far as it goes without blocking; while waiting, `wake` names what to wait for (no
    // descriptor: try again shortly).
    State advance(stream_relay::Wake &wake);
    // The checked, connected socket, once ready.
    HandedFd take() { return std::move(service_); }
    [[nodiscard]] const std::string &refusal() const { return refusal_; }

   private:
    State refuse(std::string sentence);

    std::string relay_socket_;
    ServiceEnd end_;
    UniqueFd relay_;    // the connection to the relay's socket, preface written
    HandedFd service_;  // the received descriptor
    std::string refusal_;
};

// A hand-over waited for until `timeout` or until `stop_fd` (-1: none) is readable: the checked,
// connected socket, or an empty one with `refusal` saying why.
HandedFd hand_over(const std::string &relay_socket, const ServiceEnd &end,
                   std::chrono::milliseconds timeout, int stop_fd, std::string &refusal);

}  // namespace tea::bridge
