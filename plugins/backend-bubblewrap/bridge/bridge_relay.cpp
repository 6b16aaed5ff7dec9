// tea-bridge-relay: the namespace's end of the bridge into a started HTTP service
// (docs/services-bridge-design.md), run inside the confinement as the sandbox identity.
//
//   tea-bridge-relay --socket S --address 127.0.0.1|::1 --port P [--idle-ms MS]
//
// It listens on the Unix socket S (in a private directory of the call, which the runtime's host
// listener connects to) and carries each accepted connection to the service's loopback port
// ADDRESS:P. It runs until it is killed; the call's pid namespace ends it with the call.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
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
    "usage: tea-bridge-relay --socket S --address 127.0.0.1|::1 --port P [--idle-ms MS]";

struct Options {
    std::string socket;
    sockaddr_storage service{};
    socklen_t service_size = 0;
    std::chrono::milliseconds idle{60'000};
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

// The only destinations are the service's loopback addresses: a relay handed any other address
// (by a port file or a record the target wrote) would be a route from the host to whatever that
// address reaches inside the namespace.
void set_service(Options &o, const std::string &address, std::uint16_t port) {
    if (address == "127.0.0.1") {
        auto &a = reinterpret_cast<sockaddr_in &>(o.service);
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        o.service_size = sizeof a;
    } else if (address == "::1") {
        auto &a = reinterpret_cast<sockaddr_in6 &>(o.service);
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(port);
        a.sin6_addr = in6addr_loopback;
        o.service_size = sizeof a;
    } else {
        fail("--address: only 127.0.0.1 or ::1 is a service's address, got \"" + address + "\"");
    }
}

Options parse(int argc, char **argv) {
    Options o;
    std::string address;
    long port = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a{argv[i]};
        if (i + 1 >= argc) {
            fail("option " + std::string{a} + " needs a value (" + std::string{kUsage} + ")");
        }
        const std::string v{argv[++i]};
        if (a == "--socket") {
            o.socket = v;
        } else if (a == "--address") {
            address = v;
        } else if (a == "--port") {
            port = parse_number("--port", v, 1, 65535);
        } else if (a == "--idle-ms") {
            o.idle = std::chrono::milliseconds{parse_number("--idle-ms", v, 0, 86'400'000)};
        } else {
            fail("unknown option " + std::string{a} + " (" + std::string{kUsage} + ")");
        }
    }
    if (o.socket.empty() || address.empty() || port == 0) {
        fail(std::string{kUsage});
    }
    if (o.socket.size() >= sizeof(sockaddr_un::sun_path)) {
        fail("--socket: the path is too long for a Unix socket: " + o.socket);
    }
    set_service(o, address, static_cast<std::uint16_t>(port));
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

// A non-blocking connect to loopback: a service whose backlog is full leaves the connect
// pending instead of stalling every other pair; a refused one shows as POLLERR and ends the pair.
int connect_service(const Options &o) {
    const int fd =
        ::socket(o.service.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP);
    if (fd < 0) {
        return -1;
    }
    if (::connect(fd, reinterpret_cast<const sockaddr *>(&o.service), o.service_size) != 0 &&
        errno != EINPROGRESS) {
        ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

int main(int argc, char **argv) {
    const Options options = parse(argc, argv);
    // No new privileges: nothing the relay could exec would gain any.
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    // Not dumpable: a target of the same identity cannot open the relay's /proc/PID/mem and write
    // its code.
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    (void)::signal(SIGPIPE, SIG_IGN);
    const std::vector<int> listeners{listen_unix(options.socket)};
    const tea::stream_relay::Limits limits{256, options.idle};
    tea::stream_relay::serve(
        listeners, [&options] { return connect_service(options); }, limits);
    fail("poll: " + error_text(errno));
}
