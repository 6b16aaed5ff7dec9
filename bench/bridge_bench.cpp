// The bridge into a started service (core/bridge's host listener and the real tea-bridge-relay)
// against direct loopback connections to the same server, interleaved round by round: the relay
// carrying every byte (two hops), the relay handing its connection to the host listener (one hop),
// and the handed connection used by the runtime's own client (no hop). Small requests per second
// on one keep-alive connection, the added median round-trip latency, and bulk throughput. No
// confinement: this measures the relays, not the namespace.
//
//   bridge_bench [--rounds R] [--requests N] [--mib M]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench_support.hpp"
#include "bridge/handed_socket.hpp"
#include "bridge/host_listener.hpp"
#include "util/fd.hpp"

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

// Opens one connection to the variant measured.
using Connector = std::function<int()>;

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
Small small_requests(const Connector &connect, int requests) {
    const int fd = connect();
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
double bulk(const Connector &connect, int mib) {
    const int fd = connect();
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
    const tea::bridge_preface::Destination service{tea::bridge_preface::Family::ipv4,
                                                   server.port()};
    tea::bridge::HostListener two_hops(
        {.wanted_port = 0, .service = service, .relay_socket = socket});
    // Unconfined, the relay's connections are in this process's network.
    const tea::UniqueFd network{::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)};
    tea::bridge::HostListener one_hop({.wanted_port = 0,
                                       .service = service,
                                       .relay_socket = socket,
                                       .call_network = network.get()});
    const auto handed = [&] {
        std::string refusal;
        auto fd = tea::bridge::hand_over(socket, {service, network.get()}, std::chrono::seconds{5},
                                         -1, refusal);
        if (!fd) {
            std::fprintf(stderr, "no handed connection: %s\n", refusal.c_str());
            std::exit(1);
        }
        // Blocking, as the other variants' connections are.
        ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
        no_delay(fd.get());
        return fd.release();
    };
    constexpr std::size_t kVariants = 4;
    const std::array<Connector, kVariants> variants{
        [&] { return connect_to(server.port()); }, [&] { return connect_to(two_hops.port()); },
        [&] { return connect_to(one_hop.port()); }, handed};
    std::array<std::vector<double>, kVariants> rps, us, mbs;
    for (const auto &connect : variants) {
        (void)small_requests(connect, requests / 10);  // warm-up, not counted
    }
    for (int r = 0; r < rounds; ++r) {
        // Interleaved, the order rotating, so drift on the host falls on every variant alike.
        for (std::size_t k = 0; k < kVariants; ++k) {
            const auto v = (static_cast<std::size_t>(r) + k) % kVariants;
            const Small s = small_requests(variants[v], requests);
            const double m = bulk(variants[v], mib);
            rps[v].push_back(s.per_second);
            us[v].push_back(s.median_us);
            mbs[v].push_back(m);
        }
    }
    two_hops.stop();
    one_hop.stop();
    ::kill(relay, SIGKILL);
    ::waitpid(relay, nullptr, 0);

    using tea::bench::median;
    std::printf("rounds %d, %d small requests and %d MiB per variant and round\n", rounds, requests,
                mib);
    const char *names[] = {"direct", "bridge, relay carries (two hops)",
                           "bridge, handed over (one hop)", "handed socket (no hop)"};
    for (std::size_t v = 0; v < kVariants; ++v) {
        std::printf(
            "%-33s requests/s %8.0f (%.2f)  median round trip %7.1f us (+%.1f)  bulk MiB/s %6.0f "
            "(%.2f)\n",
            names[v], median(rps[v]), median(rps[v]) / median(rps[0]), median(us[v]),
            median(us[v]) - median(us[0]), median(mbs[v]), median(mbs[v]) / median(mbs[0]));
    }
    return 0;
}
