// The bridge into a started service (core/bridge's host listener and the real tea-bridge-relay)
// against direct loopback connections to the same server, interleaved round by round: small
// requests per second on one keep-alive connection, the added median round-trip latency, and bulk
// throughput. No confinement: this measures the two relays, not the namespace.
//
//   bridge_bench [--rounds R] [--requests N] [--mib M]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
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

    std::vector<double> rps_direct, rps_bridge, us_direct, us_bridge, mbs_direct, mbs_bridge;
    (void)small_requests(server.port(), requests / 10);  // warm-up, not counted
    (void)small_requests(bridge.port(), requests / 10);
    for (int r = 0; r < rounds; ++r) {
        // Interleaved, the order alternating, so drift on the host falls on both alike.
        const bool bridge_first = r % 2 == 1;
        for (int k = 0; k < 2; ++k) {
            const bool through_bridge = (k == 0) == bridge_first;
            const std::uint16_t port = through_bridge ? bridge.port() : server.port();
            const Small s = small_requests(port, requests);
            const double m = bulk(port, mib);
            (through_bridge ? rps_bridge : rps_direct).push_back(s.per_second);
            (through_bridge ? us_bridge : us_direct).push_back(s.median_us);
            (through_bridge ? mbs_bridge : mbs_direct).push_back(m);
        }
    }
    bridge.stop();
    ::kill(relay, SIGKILL);
    ::waitpid(relay, nullptr, 0);

    using tea::bench::median;
    std::printf("rounds %d, %d small requests and %d MiB per variant and round\n", rounds, requests,
                mib);
    std::printf("small requests/s   direct %10.0f  bridge %10.0f  ratio %.2f\n", median(rps_direct),
                median(rps_bridge), median(rps_bridge) / median(rps_direct));
    std::printf("median round trip  direct %8.1f us  bridge %8.1f us  added %.1f us\n",
                median(us_direct), median(us_bridge), median(us_bridge) - median(us_direct));
    std::printf("bulk MiB/s         direct %10.0f  bridge %10.0f  ratio %.2f\n", median(mbs_direct),
                median(mbs_bridge), median(mbs_bridge) / median(mbs_direct));
    return 0;
}
