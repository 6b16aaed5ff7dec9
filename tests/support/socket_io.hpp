// Blocking socket writes for tests that play a peer over a real socket.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <string_view>

namespace tea::test {

// Writes all of `bytes`, without SIGPIPE; false once the peer is gone or the socket fails.
inline bool send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

}  // namespace tea::test
