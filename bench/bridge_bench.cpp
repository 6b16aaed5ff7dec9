// The bridge into a started service (core/bridge's host listener and the real tea-bridge-relay)
// against direct loopback connections to the same server, and against one relay hop in the host
// (the next design's data path), interleaved round by round: small
// requests per second on one keep-alive connection, the added median round-trip latency, and bulk
// throughput. No confinement: this measures the two relays, not the namespace.
//
//   bridge_bench [--rounds R] [--requests N] [--mib M]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench_support.hpp"
#include "bridge/host_listener.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kRequest = "GET /small HTTP/1.1\r\nHost: bench\r\n\r\n";
constexpr std::string_view kReply = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

void no_delay(int fd) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool read_exactly(int fd, char *buffer, std::size_t size) {
    for (std::size_t got = 0; got < size;) {
        const auto n = ::recv(fd, buffer + got, size - got, 0);
        if (n <= 0) {
            return false;
        }
        got += static_cast<std::size_t>(n);
    }
    return true;
}

// A loopback server: a connection whose first byte is 'G' is answered request by request (each
// request is kRequest's size); any other is a sink read to its end.
class Server {
   public:
    Server() {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
            ::listen(fd_, 128) != 0) {
            std::perror("server");
            std::exit(1);
        }
        socklen_t size = sizeof a;
        ::getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &size);
        port_ = ntohs(a.sin_port);
        std::thread([fd = fd_] {
            for (;;) {
                const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
                if (c < 0) {
                    return;
                }
                std::thread(serve, c).detach();
            }
        }).detach();
    }
    [[nodiscard]] std::uint16_t port() const { return port_; }

   private:
    static void serve(int c) {
        no_delay(c);
        std::vector<char> buffer(std::size_t{1} << 16);
        if (!read_exactly(c, buffer.data(), 1)) {
            ::close(c);
            return;
        }
        if (buffer[0] == 'G') {
            while (read_exactly(c, buffer.data() + 1, kRequest.size() - 1)) {
                (void)!::send(c, kReply.data(), kReply.size(), MSG_NOSIGNAL);
                if (!read_exactly(c, buffer.data(), 1)) {
                    break;
                }
            }
        } else {
            while (::recv(c, buffer.data(), buffer.size(), 0) > 0) {
            }
            (void)!::send(c, "k", 1, MSG_NOSIGNAL);  // the whole upload arrived
        }
        ::close(c);
    }
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

// A listening TCP socket on 127.0.0.1 at a port the system picks, non-blocking.
int tcp_listener() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0) {
        std::perror("listen");
        std::exit(1);
    }
    return fd;
}

std::uint16_t bound_port(int fd) {
    sockaddr_in a{};
    socklen_t size = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &size);
    return ntohs(a.sin_port);
}

int connect_nonblocking(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
        ::close(fd);
        return -1;
    }
    return fd;
}

int connect_to(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
        std::perror("connect");
        std::exit(1);
    }
    no_delay(fd);
    return fd;
}

struct Small {
    double per_second = 0;
    double median_us = 0;
};

// N request/reply round trips on one connection.
Small small_requests(std::uint16_t port, int requests) {
    const int fd = connect_to(port);
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(requests));
    char reply[kReply.size()];
    const auto start = Clock::now();
    for (int i = 0; i < requests; ++i) {
        const auto t = Clock::now();
        if (::send(fd, kRequest.data(), kRequest.size(), MSG_NOSIGNAL) !=
                static_cast<ssize_t>(kRequest.size()) ||
            !read_exactly(fd, reply, sizeof reply)) {
            std::fprintf(stderr, "a small request failed\n");
            std::exit(1);
        }
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    ::close(fd);
    return {requests / seconds, tea::bench::median(us)};
}

// MiB/s for `mib` MiB sent to the sink, until the sink confirms the end.
double bulk(std::uint16_t port, int mib) {
    const int fd = connect_to(port);
    std::vector<char> chunk(std::size_t{1} << 20, 'x');
    const auto start = Clock::now();
    for (int i = 0; i < mib; ++i) {
        for (std::size_t sent = 0; sent < chunk.size();) {
            const auto n = ::send(fd, chunk.data() + sent, chunk.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) {
                std::fprintf(stderr, "the bulk transfer failed\n");
                std::exit(1);
            }
            sent += static_cast<std::size_t>(n);
        }
    }
    ::shutdown(fd, SHUT_WR);
    char k = 0;
    if (!read_exactly(fd, &k, 1)) {
        std::fprintf(stderr, "the bulk transfer did not arrive\n");
        std::exit(1);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    ::close(fd);
    return mib / seconds;
}

int option(int argc, char **argv, std::string_view name, int fallback) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (name == argv[i]) {
            return std::atoi(argv[i + 1]);
        }
    }
    return fallback;
}

}  // namespace

int main(int argc, char **argv) {
    const int rounds = option(argc, argv, "--rounds", 9);
    const int requests = option(argc, argv, "--requests", 20'000);
    const int mib = option(argc, argv, "--mib", 512);
    (void)::signal(SIGPIPE, SIG_IGN);

    Server server;
    char pattern[] = "/tmp/tea-bridge-bench-XXXXXX";
    const std::string dir = ::mkdtemp(pattern);
    tea::bench::remove_at_exit(dir);
    const std::string socket = dir + "/bridge.sock";
    const pid_t relay = ::fork();
    if (relay == 0) {
        ::execl(TEA_BRIDGE_RELAY, TEA_BRIDGE_RELAY, "--socket", socket.c_str(), nullptr);
        ::_exit(127);
    }
    while (!fs::exists(socket)) {
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
    tea::bridge::HostListener bridge({.wanted_port = 0,
                                      .service = {tea::bridge_preface::Family::ipv4, server.port()},
                                      .relay_socket = socket});

    // The next design's data path, for comparison: one relay in the host's process carrying each
    // connection straight to the service's TCP port (as it would once the relay hands the host
    // its connection to the service), with the same epoll loop and splicing.
    const int one_hop_listener = tcp_listener();
    const int one_hop_stop = ::eventfd(0, EFD_CLOEXEC);
    std::thread one_hop([&] {
        const std::vector<int> listeners{one_hop_listener};
        tea::stream_relay::serve(
            listeners, [&](int) { return connect_nonblocking(server.port()); },
            tea::stream_relay::Limits{}, one_hop_stop);
    });
    const std::array<std::uint16_t, 3> ports{server.port(), bridge.port(),
                                             bound_port(one_hop_listener)};
    std::array<std::vector<double>, 3> rps, us, mbs;
    for (const auto port : ports) {
        (void)small_requests(port, requests / 10);  // warm-up, not counted
    }
    for (int r = 0; r < rounds; ++r) {
        // Interleaved, the order rotating, so drift on the host falls on every variant alike.
        for (int k = 0; k < 3; ++k) {
            const auto v = static_cast<std::size_t>((r + k) % 3);
            const Small s = small_requests(ports[v], requests);
            const double m = bulk(ports[v], mib);
            rps[v].push_back(s.per_second);
            us[v].push_back(s.median_us);
            mbs[v].push_back(m);
        }
    }
    bridge.stop();
    const std::uint64_t one = 1;
    (void)!::write(one_hop_stop, &one, sizeof one);
    one_hop.join();
    ::kill(relay, SIGKILL);
    ::waitpid(relay, nullptr, 0);

    using tea::bench::median;
    std::printf("rounds %d, %d small requests and %d MiB per variant and round\n", rounds, requests,
                mib);
    const char *names[] = {"direct", "bridge (two relays)", "one relay hop (next design)"};
    for (std::size_t v = 0; v < 3; ++v) {
        std::printf(
            "%-28s requests/s %8.0f (%.2f)  median round trip %7.1f us (+%.1f)  bulk MiB/s %6.0f "
            "(%.2f)\n",
            names[v], median(rps[v]), median(rps[v]) / median(rps[0]), median(us[v]),
            median(us[v]) - median(us[0]), median(mbs[v]), median(mbs[v]) / median(mbs[0]));
    }
    return 0;
}
