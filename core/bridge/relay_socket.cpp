#include "bridge/relay_socket.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/fd.hpp"

namespace tea::bridge {

int connect_relay_socket(const std::string &path) {
    // O_NOFOLLOW on the last component; the directories above it are the runtime's own.
    const UniqueFd node{::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC)};
    if (!node) {
        return -1;
    }
    struct stat st {};
    if (::fstat(node.get(), &st) != 0) {
        return -1;
    }
    if (!S_ISSOCK(st.st_mode)) {
        // A link opened with O_PATH|O_NOFOLLOW is the link itself.
        errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTSOCK;
        return -1;
    }
    UniqueFd fd{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
    if (!fd) {
        return -1;
    }
    // Connecting through the descriptor's /proc path reaches the inode opened above, whatever
    // the path names by now.
    const std::string via = "/proc/self/fd/" + std::to_string(node.get());
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, via.data(), via.size());
    if (::connect(fd.get(), reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
        return -1;
    }
    return fd.release();
}

}  // namespace tea::bridge
