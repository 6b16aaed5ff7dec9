// tea-egress-shim: the loopback end of a call's egress route, run by the backend's plan inside
// the confinement, in front of the sandbox helper.
//
//   tea-egress-shim --port P --socket S -- PROGRAM ARGS...
//
// It listens on 127.0.0.1:P (and [::1]:P when the namespace has IPv6), detaches a relay that
// carries each accepted connection to the Unix socket S (the runtime's CONNECT proxy), and
// execs PROGRAM. The relay is a grandchild, so the program never sees it as its child; it lives
// in the call's pid namespace, so it ends when the namespace's first process does. It holds no
// privilege the target lacks: the same identity, no capability, and the only place it connects
// to is S, which the target could reach itself; it exists because HTTPS clients speak to a
// proxy over TCP.
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

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <tea/namespace_init.hpp>
#include <tea/stream_relay.hpp>
#include <vector>

namespace {

// strerror's buffer is only shared between threads, and the shim has one.
std::string error_text(int error) {
    return std::strerror(error);  // NOLINT(concurrency-mt-unsafe)
}

[[noreturn]] void fail(const std::string &message) {
    const std::string line = "tea-egress-shim: " + message + "\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
    ::_exit(125);
}

struct Options {
    std::uint16_t port = 0;
    std::string socket;
    char **program = nullptr;
};

Options parse(int argc, char **argv) {
    Options o;
    int i = 1;
    for (; i < argc; ++i) {
        const std::string_view a{argv[i]};
        if (a == "--") {
            ++i;
            break;
        }
        if (i + 1 >= argc) {
            fail("option " + std::string{a} + " needs a value");
        }
        const std::string v{argv[++i]};
        if (a == "--port") {
            char *end = nullptr;
            const long n = std::strtol(v.c_str(), &end, 10);
            if (end == v.c_str() || *end != '\0' || n < 1 || n > 65535) {
                fail("--port: expected a port from 1 to 65535");
            }
            o.port = static_cast<std::uint16_t>(n);
        } else if (a == "--socket") {
            o.socket = v;
        } else {
            fail("unknown option " + std::string{a} +
                 " (usage: tea-egress-shim --port P --socket S -- PROGRAM ARGS...)");
        }
    }
    if (o.port == 0 || o.socket.empty() || i >= argc) {
        fail("usage: tea-egress-shim --port P --socket S -- PROGRAM ARGS...");
    }
    if (o.socket.size() >= sizeof(sockaddr_un::sun_path)) {
        fail("--socket: the path is too long for a Unix socket");
    }
    o.program = argv + i;
    return o;
}

int listen_on(int family, std::uint16_t port) {
    const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return -1;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc = -1;
    if (family == AF_INET) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        rc = ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    } else {
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(port);
        a.sin6_addr = in6addr_loopback;
        rc = ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    }
    if (rc != 0 || ::listen(fd, 128) != 0) {
        const int saved = errno;
        ::close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

[[noreturn]] void relay(const std::vector<int> &listeners, const std::string &socket) {
    // 256 connections carried at once, the rest wait in the backlog; no idle limit: a target's
    // tunnel may idle as long as its call lasts.
    const tea::stream_relay::Limits limits{.max_pairs = 256, .idle = {}};
    tea::stream_relay::serve(
        listeners, [&socket](int) { return tea::stream_relay::connect_unix(socket); }, limits);
    ::_exit(1);
}

// Detaches the relay: a child forks the relay and exits at once, so the relay's parent is the
// namespace's first process and the program exec'd next never has it as its child.
void detach(const std::vector<int> &listeners, const std::string &socket) {
    const pid_t child = ::fork();
    if (child < 0) {
        fail(std::string{"fork: "} + error_text(errno));
    }
    if (child == 0) {
        const pid_t relay_pid = ::fork();
        if (relay_pid != 0) {
            ::_exit(relay_pid < 0 ? 1 : 0);
        }
        ::setsid();
        // No new privileges: nothing the relay could exec would gain any.
        ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        // Not dumpable: a target of the same identity cannot open the relay's /proc/PID/mem and
        // write its code.
        ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        // The call's stdout and stderr stay with the target: a relay holding them open would
        // keep the call's output from ending.
        const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
            ::dup2(null, STDIN_FILENO);
            ::dup2(null, STDOUT_FILENO);
            ::dup2(null, STDERR_FILENO);
        }
        // Every descriptor the call handed down (the helper, its environment) stays out of
        // the relay; the listeners are close-on-exec and the relay never execs.
        int low = 3;
        for (const int l : listeners) {
            if (l > low) {
                ::syscall(SYS_close_range, static_cast<unsigned>(low), static_cast<unsigned>(l - 1),
                          0U);
            }
            low = l + 1;
        }
        ::syscall(SYS_close_range, static_cast<unsigned>(low), ~0U, 0U);
        (void)::signal(SIGPIPE, SIG_IGN);
        // The namespace's init passes the runtime's SIGTERM to every process of the namespace:
        // the target keeps its route out through the grace it is given to end.
        (void)::signal(SIGTERM, SIG_IGN);
        relay(listeners, socket);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fail("could not start the relay");
    }
}

// As the pid namespace's first process (the backend starts it so, with bwrap's own init left
// out), the shim stays the namespace's init (tea/namespace_init.hpp): the program runs as its
// child, every orphan (the relay's first parent included) is reaped, and the program's status is
// the shim's, 128 + N for a signal as bwrap's own init reports it; the runtime's death ends the
// namespace, the relay and the target with it. Signals a process of the namespace sends its init
// are dropped by the kernel, as they were for bwrap's.
[[noreturn]] void run_as_init(char **program) {
    const pid_t child = ::fork();
    if (child < 0) {
        fail(std::string{"fork: "} + error_text(errno));
    }
    if (child == 0) {
        tea::namespace_init::release_end_signal();
        ::execv(program[0], program);
        fail(std::string{"cannot run "} + program[0] + ": " + error_text(errno));
    }
    // The init holds nothing the target lacks: the descriptors handed down (the helper, the
    // environment) go with the child, and its memory does not open for a target of the same
    // identity.
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    tea::namespace_init::serve(child);
}

}  // namespace

int main(int argc, char **argv) {
    tea::namespace_init::hold_end_signal();
    const Options options = parse(argc, argv);
    // A runtime killed before bwrap got this far would leave a route, and a target, nobody ends.
    if (tea::namespace_init::host_gone()) {
        fail("the runtime that started the call is gone");
    }
    std::vector<int> listeners;
    const int v4 = listen_on(AF_INET, options.port);
    if (v4 < 0) {
        // Without the loopback listener the proxy variables would name nothing: stop the call.
        fail("cannot listen on 127.0.0.1:" + std::to_string(options.port) + ": " +
             error_text(errno));
    }
    listeners.push_back(v4);
    if (const int v6 = listen_on(AF_INET6, options.port); v6 >= 0) {
        listeners.push_back(v6);
    }
    std::sort(listeners.begin(), listeners.end());
    detach(listeners, options.socket);
    for (const int l : listeners) {
        ::close(l);
    }
    if (::getpid() == 1) {
        run_as_init(options.program);
    }
    tea::namespace_init::release_end_signal();
    ::execv(options.program[0], options.program);
    fail(std::string{"cannot run "} + options.program[0] + ": " + error_text(errno));
}
