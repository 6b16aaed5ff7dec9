#include "exec/plan_descriptors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace tea::exec::detail {

Error setup_error(const std::string &what, int error_number) {
    return runtime_failure("cannot set up the call: " + what + ": " + errno_text(error_number));
}

void write_all(int fd, const char *data, std::size_t size) {
    while (size > 0) {
        const auto n = ::write(fd, data, size);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw setup_error("write", errno);
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

// The same open file above every descriptor number a plan may name (3..255), so that placing one
// descriptor at its number in the child never overwrites the source of another.
UniqueFd above_plan_numbers(UniqueFd low) {
    UniqueFd high{::fcntl(low.get(), F_DUPFD_CLOEXEC, runner_descriptor_floor)};
    if (!high) {
        throw setup_error("fcntl(F_DUPFD_CLOEXEC)", errno);
    }
    return high;
}

// A connected pair of stream sockets, both ends above the plan's numbers.
std::array<UniqueFd, 2> socket_pair() {
    std::array<int, 2> p{};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p.data()) != 0) {
        throw setup_error("socketpair", errno);
    }
    UniqueFd first{p[0]};
    UniqueFd second{p[1]};
    return {above_plan_numbers(std::move(first)), above_plan_numbers(std::move(second))};
}

// The plan's bytes in a sealed memfd: the child reads exactly what was
// planned, and nothing can change it after the plan was checked.
UniqueFd sealed_memfd(const std::string &content) {
    UniqueFd fd{::memfd_create("tea-plan-file", MFD_CLOEXEC | MFD_ALLOW_SEALING)};
    if (!fd) {
        throw setup_error("memfd_create", errno);
    }
    write_all(fd.get(), content.data(), content.size());
    if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) !=
            0 ||
        ::lseek(fd.get(), 0, SEEK_SET) != 0) {
        throw setup_error("sealing a plan file", errno);
    }
    return above_plan_numbers(std::move(fd));
}

// A file the plan names, open for reading only: what the child gets is a
// descriptor, never the right to write it.
UniqueFd opened_file(const std::string &path) {
    UniqueFd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)};
    if (!fd) {
        throw setup_error("opening " + path + " for the call", errno);
    }
    return above_plan_numbers(std::move(fd));
}

// A deferred file: a socket pair, one end for the child, the other the runtime's. A socket rather
// than a pipe: the runtime writes with MSG_NOSIGNAL, so a process that died before reading costs
// it an error, never SIGPIPE.
std::array<UniqueFd, 2> deferred_pair() {
    auto ends = socket_pair();
    // The child only reads: a write back would fill a buffer nobody reads.
    ::shutdown(ends[0].get(), SHUT_WR);
    ::fcntl(ends[1].get(), F_SETFL, O_NONBLOCK);
    return ends;
}

}  // namespace tea::exec::detail
