// tea-bridge-relay: the namespace's end of the bridge into a started HTTP service
// (docs/services-bridge-design.md), run inside the confinement as the sandbox identity.
//
//   tea-bridge-relay --socket S [--idle-ms MS] [-- PROGRAM ARGS...]
//
// It listens on the Unix socket S (in a private directory of the call, which the runtime's host
// listener connects to) and carries each accepted connection to the service's loopback port that
// the connection's preface names (tea/bridge_preface.hpp): 127.0.0.1 or ::1, nothing else; or,
// when the preface asks, connects there and hands the connection to the host, keeping no copy.
// Alone, it runs until it is killed. In front of PROGRAM (how a plan starts it beside the
// service), it listens first, detaches the relay and execs PROGRAM in its own place, so PROGRAM
// keeps its process, its status and its children; the relay ends when PROGRAM's process ends.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <tea/bridge_preface.hpp>
#include <tea/send_descriptors.hpp>
#include <tea/stream_relay.hpp>
#include <vector>

namespace {

// strerror's buffer is only shared between threads, and the relay has one.
std::string error_text(int error) {
    return std::strerror(error);  // NOLINT(concurrency-mt-unsafe)
}

[[noreturn]] void fail(const std::string &message) {
    const std::string line = "tea-bridge-relay: " + message + "\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
    ::_exit(125);
}

constexpr std::string_view kUsage =
    "usage: tea-bridge-relay --socket S [--idle-ms MS] [-- PROGRAM ARGS...]";

struct Options {
    std::string socket;
    std::chrono::milliseconds idle{60'000};
    char **program = nullptr;  // after "--": what runs beside the relay
};

long parse_number(const std::string &option, const std::string &v, long low, long high) {
    char *end = nullptr;
    errno = 0;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0' || errno != 0 || n < low || n > high) {
        fail(option + ": expected a number from " + std::to_string(low) + " to " +
             std::to_string(high) + ", got \"" + v + "\"");
    }
    return n;
}

Options parse(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a{argv[i]};
        if (a == "--") {
            if (i + 1 >= argc) {
                fail("nothing to run after -- (" + std::string{kUsage} + ")");
            }
            o.program = argv + i + 1;
            break;
        }
        if (i + 1 >= argc) {
            fail("option " + std::string{a} + " needs a value (" + std::string{kUsage} + ")");
        }
        const std::string v{argv[++i]};
        if (a == "--socket") {
            o.socket = v;
        } else if (a == "--idle-ms") {
            o.idle = std::chrono::milliseconds{parse_number("--idle-ms", v, 0, 86'400'000)};
        } else {
            fail("unknown option " + std::string{a} + " (" + std::string{kUsage} + ")");
        }
    }
    if (o.socket.empty()) {
        fail(std::string{kUsage});
    }
    if (o.socket.size() >= sizeof(sockaddr_un::sun_path)) {
        fail("--socket: the path is too long for a Unix socket: " + o.socket);
    }
    return o;
}

int listen_unix(const std::string &path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        fail("socket: " + error_text(errno));
    }
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.data(), path.size());
    // bind refuses a path that exists: the relay never takes over a socket or file it finds.
    if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0) {
        fail("cannot listen on " + path + ": " + error_text(errno));
    }
    return fd;
}

// The service's loopback address at the port the connection's preface names. The only
// destinations are 127.0.0.1 and ::1: a relay that connected wherever it was told would be a route
// from the host to whatever the namespace reaches.
sockaddr_storage service_address(const tea::bridge_preface::Destination &d, socklen_t &size) {
    sockaddr_storage storage{};
    if (d.family == tea::bridge_preface::Family::ipv4) {
        auto &a = reinterpret_cast<sockaddr_in &>(storage);
        a.sin_family = AF_INET;
        a.sin_port = htons(d.port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        size = sizeof a;
    } else {
        auto &a = reinterpret_cast<sockaddr_in6 &>(storage);
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(d.port);
        a.sin6_addr = in6addr_loopback;
        size = sizeof a;
    }
    return storage;
}

// Sends the connection to the service to the host over `accepted` and closes the relay's copy:
// the host then carries its client's bytes to the service itself, and the relay is off the data
// path. The host checks what arrives as the target's (core/bridge/handed_socket.hpp).
int hand_over(int accepted, int service) {
    const auto sent = tea::send_descriptors(accepted, {service}, MSG_DONTWAIT);
    ::close(service);
    if (sent != 1) {
        errno = ECONNRESET;
        return -1;
    }
    return tea::stream_relay::kHandedOver;
}

// Reads the accepted connection's preface and connects to the service, non-blocking: a service
// whose backlog is full leaves the connect pending instead of stalling every other pair; a
// refused one shows as an error and ends the pair. -1 with errno EAGAIN: the preface has not all
// arrived. A preface asking for the hand-over gets the connection sent back (kHandedOver).
int connect_service(int accepted) {
    std::array<std::uint8_t, tea::bridge_preface::kBytes> bytes{};
    const auto peeked = ::recv(accepted, bytes.data(), bytes.size(), MSG_PEEK | MSG_DONTWAIT);
    if (peeked < 0 || (peeked > 0 && static_cast<std::size_t>(peeked) < bytes.size())) {
        errno = peeked < 0 ? errno : EAGAIN;
        return -1;
    }
    if (peeked == 0 || ::recv(accepted, bytes.data(), bytes.size(), MSG_DONTWAIT) !=
                           static_cast<ssize_t>(bytes.size())) {
        errno = ECONNRESET;
        return -1;
    }
    const auto destination = tea::bridge_preface::decode(bytes);
    if (!destination) {
        errno = EINVAL;  // not a preface: the connection is closed
        return -1;
    }
    socklen_t size = 0;
    const sockaddr_storage address = service_address(*destination, size);
    const int fd =
        ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP);
    if (fd < 0) {
        return -1;
    }
    if (::connect(fd, reinterpret_cast<const sockaddr *>(&address), size) != 0 &&
        errno != EINPROGRESS) {
        const int error = errno;
        ::close(fd);
        errno = error == EAGAIN ? ECONNREFUSED : error;
        return -1;
    }
    // A connect still in progress is handed as it is: the host waits for it before any byte.
    return destination->hand_over ? hand_over(accepted, fd) : fd;
}

// Carries connections until `stop_fd` (when not -1) is readable.
[[noreturn]] void relay(const Options &options, int listener, int stop_fd) {
    (void)::signal(SIGPIPE, SIG_IGN);
    const std::vector<int> listeners{listener};
    // A connection whose preface has not come within the wait is closed: the host writes it at
    // once, and a peer that never does would keep every other client in the backlog.
    const tea::stream_relay::Limits limits{256, options.idle, std::chrono::milliseconds{2000}};
    if (tea::stream_relay::serve(listeners, connect_service, limits, stop_fd)) {
        ::_exit(0);
    }
    fail("epoll: " + error_text(errno));
}

// Starts the relay beside `program` and becomes the program. The relay is the child of a child
// that exits at once: never the program's child, whose wait(2) for its own children (a shell's
// `wait`) it would hold, and never its parent. It watches the program's process through a pidfd
// and ends when that process does, so it never keeps the call alive after the target's end.
[[noreturn]] void beside(const Options &options, int listener) {
    const int program_ended = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
    if (program_ended < 0) {
        fail("pidfd_open: " + error_text(errno));
    }
    // Opened here, before the program is exec'd: an audit that starts at that exec would
    // otherwise take the relay's open of /dev/null, made at the same time, for the target's.
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0) {
        fail("/dev/null: " + error_text(errno));
    }
    const pid_t child = ::fork();
    if (child < 0) {
        fail("fork: " + error_text(errno));
    }
    if (child == 0) {
        const pid_t relay_pid = ::fork();
        if (relay_pid == 0) {
            // The program's streams are the call's output: the relay holding them would keep
            // the runtime reading after the program's end.
            for (int fd = 0; fd <= 2; ++fd) {
                ::dup2(null, fd);
            }
            relay(options, listener, program_ended);
        }
        ::_exit(relay_pid < 0 ? 125 : 0);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fail("the relay could not be started");
    }
    ::close(listener);
    ::close(program_ended);
    ::close(null);
    ::execvp(options.program[0], options.program);
    const int error = errno;
    const std::string line = "tea-bridge-relay: cannot run " + std::string{options.program[0]} +
                             ": " + error_text(error) + "\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
    ::_exit(error == ENOENT ? 127 : 126);
}

}  // namespace

int main(int argc, char **argv) {
    const Options options = parse(argc, argv);
    // No new privileges: nothing the relay could exec would gain any.
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    // Not dumpable, before any fork: a target of the same identity, which may start before the
    // detached relay's first instruction, cannot open its /proc/PID/mem and write its code. The
    // program's exec makes the program dumpable again as the kernel decides; the relay stays not.
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    // Listening before the program starts: the socket exists by the time the service does.
    const int listener = listen_unix(options.socket);
    if (options.program != nullptr) {
        beside(options, listener);
    }
    relay(options, listener, -1);
}
