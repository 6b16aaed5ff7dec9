// Which addresses a service listens on at its port, read from the host in the call's network
// namespace (/proc/<pid>/net/tcp and tcp6 of a process inside it), before the bridge opens a way
// in: a service reachable on an address other than loopback is refused, named, and recorded.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace tea::bridge {

struct Listening {
    bool ok = false;
    bool ipv4 = false;    // 127.0.0.1 (or ::ffff:127.0.0.1) listens at the port
    bool ipv6 = false;    // ::1 listens at the port
    std::string refusal;  // when not ok: names the address, or says nothing listens
};

// The listening sockets at `port` in the tables' text (the contents of /proc/net/tcp and tcp6).
Listening listening_in(std::string_view tcp, std::string_view tcp6, std::uint16_t port);

// The same, read from /proc/<pid>/net/{tcp,tcp6}; a table that cannot be read is a refusal.
Listening check_listening(pid_t pid, std::uint16_t port);

}  // namespace tea::bridge
