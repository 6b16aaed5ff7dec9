// The host's connection to the relay's socket in the bridge's directory. The target can write in
// that directory, so it can put a symbolic link where the socket was: connecting by path would
// then reach whatever Unix socket of the host the link names (a container runtime's, a desktop
// bus) with the runtime's own identity. The socket is opened without following a link, checked to
// be a socket, and connected to through /proc/self/fd.
#pragma once

#include <string>

namespace tea::bridge {

// A non-blocking connection to the Unix socket at `path`, or -1 with errno set: EAGAIN when its
// backlog is full, ELOOP when the last component is a link, ENOTSOCK when it is no socket.
int connect_relay_socket(const std::string &path);

}  // namespace tea::bridge
