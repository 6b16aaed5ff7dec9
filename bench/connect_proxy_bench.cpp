// What the egress CONNECT proxy costs, measured in one run on this machine's loopback: bulk
// throughput and per-connection latency through the proxy against the same server reached
// directly, repeated and interleaved so that both see the same machine state.
//
//   connect_proxy_bench [--bytes N] [--repeats N] [--connections N] [--buffer-bytes N]
//                       [--mode splice|buffer|both]
//
// The proxy path is: client -> Unix socket -> proxy -> TCP 127.0.0.1 -> server. The in-namespace
// shim that a real target goes through (TCP -> Unix socket) is not part of this measurement.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "proxy.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using tea::egress::ConnectProxy;
using tea::egress::Policy;
using tea::egress::ProxyOptions;

constexpr std::size_t kChunk = 256 * 1024;

[[noreturn]] void die(const std::string &what) {
    std::fprintf(stderr, "connect_proxy_bench: %s: %s\n", what.c_str(), std::strerror(errno));
    std::exit(2);
}

void send_all(int fd, const char *data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die("send");
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

void recv_exactly(int fd, char *data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::recv(fd, data, size, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die("recv");
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

// The server: each connection sends one command byte. 'D' + 8-byte count: the server sends that
// many bytes and closes. 'E': the server echoes one byte, then waits for the client to close.
class Server {
   public:
    Server() {
        listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const int one = 1;
        ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(listener_, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0 ||
            ::listen(listener_, 1024) != 0) {
            die("server bind");
        }
        socklen_t length = sizeof address;
        ::getsockname(listener_, reinterpret_cast<sockaddr *>(&address), &length);
        port_ = ntohs(address.sin_port);
        thread_ = std::thread([this] { accept_loop(); });
    }
    ~Server() {
        ::shutdown(listener_, SHUT_RDWR);
        thread_.join();
        ::close(listener_);
    }
    Server(const Server &) = delete;
    Server &operator=(const Server &) = delete;
    std::uint16_t port() const { return port_; }

   private:
    void accept_loop() {
        for (;;) {
            const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR) continue;
                return;
            }
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            std::thread([fd] { serve(fd); }).detach();
        }
    }

    static void serve(int fd) {
        char command = 0;
        if (::recv(fd, &command, 1, MSG_WAITALL) == 1) {
            if (command == 'D') {
                std::uint64_t count = 0;
                if (::recv(fd, &count, sizeof count, MSG_WAITALL) == sizeof count) {
                    std::vector<char> block(kChunk, 'x');
                    while (count > 0) {
                        const std::size_t n = std::min<std::uint64_t>(count, block.size());
                        const ssize_t sent = ::send(fd, block.data(), n, MSG_NOSIGNAL);
                        if (sent <= 0) break;
                        count -= static_cast<std::uint64_t>(sent);
                    }
                }
            } else if (command == 'E') {
                char byte = 0;
                if (::recv(fd, &byte, 1, MSG_WAITALL) == 1) {
                    (void)::send(fd, &byte, 1, MSG_NOSIGNAL);
                    (void)::recv(fd, &byte, 1, 0);  // until the client closes
                }
            }
        }
        ::close(fd);
    }

    int listener_ = -1;
    std::uint16_t port_ = 0;
    std::thread thread_;
};

int connect_direct(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0) {
        die("connect direct");
    }
    return fd;
}

// Connects to the proxy and opens a tunnel to the server; returns the tunnel's socket.
int connect_proxied(const fs::path &socket, std::uint16_t port) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0) {
        die("connect proxy");
    }
    const std::string head = "CONNECT 127.0.0.1:" + std::to_string(port) +
                             " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n\r\n";
    send_all(fd, head.data(), head.size());
    static constexpr std::string_view kOk = "HTTP/1.1 200 Connection established\r\n\r\n";
    char answer[kOk.size()];
    recv_exactly(fd, answer, sizeof answer);
    if (std::string_view(answer, sizeof answer) != kOk) {
        std::fprintf(stderr, "connect_proxy_bench: the proxy refused the tunnel\n");
        std::exit(2);
    }
    return fd;
}

double cpu_seconds() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval &t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

struct Transfer {
    double gib_per_second = 0;
    double cpu_per_gib = 0;  // every thread of this process: client, server and proxy
};

Transfer download(int fd, std::uint64_t bytes) {
    const double cpu_start = cpu_seconds();
    const auto start = Clock::now();
    char command[9] = {'D'};
    std::memcpy(command + 1, &bytes, sizeof bytes);
    send_all(fd, command, sizeof command);
    std::vector<char> buffer(kChunk);
    std::uint64_t got = 0;
    for (;;) {
        const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::uint64_t>(n);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (got != bytes) {
        std::fprintf(stderr, "connect_proxy_bench: received %llu of %llu bytes\n",
                     static_cast<unsigned long long>(got), static_cast<unsigned long long>(bytes));
        std::exit(2);
    }
    const double gib = static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
    return {gib / seconds, (cpu_seconds() - cpu_start) / gib};
}

// connect (+ CONNECT and its answer) + one byte there and back, in microseconds.
template <typename Connect>
double first_byte(Connect connect) {
    const auto start = Clock::now();
    const int fd = connect();
    const char request[2] = {'E', 'x'};
    send_all(fd, request, sizeof request);
    char echo = 0;
    recv_exactly(fd, &echo, 1);
    const double micros = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    ::close(fd);
    return micros;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t mid = values.size() / 2;
    return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

struct Settings {
    std::uint64_t bytes = 1ull << 30;
    int repeats = 5;
    int connections = 2000;
    std::size_t buffer_bytes = ProxyOptions{}.buffer_bytes;
    std::vector<bool> splice_modes = {true, false};
};

Settings parse(int argc, char **argv) {
    Settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--bytes" && has_value) {
            s.bytes = std::stoull(argv[++i]);
        } else if (arg == "--repeats" && has_value) {
            s.repeats = std::max(1, std::stoi(argv[++i]));
        } else if (arg == "--connections" && has_value) {
            s.connections = std::max(10, std::stoi(argv[++i]));
        } else if (arg == "--buffer-bytes" && has_value) {
            s.buffer_bytes = std::max<std::size_t>(4096, std::stoull(argv[++i]));
        } else if (arg == "--mode" && has_value) {
            const std::string mode = argv[++i];
            if (mode == "splice") {
                s.splice_modes = {true};
            } else if (mode == "buffer") {
                s.splice_modes = {false};
            } else if (mode != "both") {
                throw std::invalid_argument("--mode takes splice, buffer or both");
            }
        } else {
            throw std::invalid_argument(
                "usage: connect_proxy_bench [--bytes N] [--repeats N] "
                "[--connections N] [--buffer-bytes N] "
                "[--mode splice|buffer|both]");
        }
    }
    return s;
}

bool run(const Settings &settings, bool use_splice, const Server &server) {
    char pattern[] = "/tmp/tea-proxy-bench-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) die("mkdtemp");
    const fs::path dir = pattern;
    const fs::path socket = dir / "egress.sock";
    ProxyOptions options;
    options.use_splice = use_splice;
    options.buffer_bytes = settings.buffer_bytes;
    options.max_tunnels = static_cast<std::size_t>(settings.connections) * 2 +
                          static_cast<std::size_t>(settings.repeats) + 16;
    ConnectProxy proxy(Policy("bench", {{"127.0.0.1", server.port(), {}}}), options);
    proxy.start(socket);
    const std::uint16_t port = server.port();

    std::vector<double> direct_rate;
    std::vector<double> proxied_rate;
    std::vector<double> direct_cpu;
    std::vector<double> proxied_cpu;
    for (int r = 0; r < settings.repeats; ++r) {
        // Alternate which goes first, so neither always meets a warm or a cold cache.
        for (int k = 0; k < 2; ++k) {
            const bool proxied = (r + k) % 2 == 1;
            const int fd = proxied ? connect_proxied(socket, port) : connect_direct(port);
            const Transfer t = download(fd, settings.bytes);
            (proxied ? proxied_rate : direct_rate).push_back(t.gib_per_second);
            (proxied ? proxied_cpu : direct_cpu).push_back(t.cpu_per_gib);
            ::close(fd);
        }
    }

    std::vector<double> direct_latency;
    std::vector<double> proxied_latency;
    // One of each in turn, so that both see the same moments of a busy machine.
    for (int i = 0; i < settings.connections; ++i) {
        const bool proxied_first = i % 2 == 1;
        for (int k = 0; k < 2; ++k) {
            if ((k == 0) == proxied_first) {
                proxied_latency.push_back(
                    first_byte([&] { return connect_proxied(socket, port); }));
            } else {
                direct_latency.push_back(first_byte([&] { return connect_direct(port); }));
            }
        }
    }
    proxy.stop();
    std::error_code ignored;
    fs::remove_all(dir, ignored);

    const double rate_direct = median(direct_rate);
    const double rate_proxied = median(proxied_rate);
    const double ratio = rate_proxied / rate_direct;
    const double lat_direct = median(direct_latency);
    const double lat_proxied = median(proxied_latency);
    const double added_us = lat_proxied - lat_direct;
    std::printf("mode %s: %d x %.2f GiB, %zu connections each way\n",
                use_splice ? "splice" : "buffer", settings.repeats,
                static_cast<double>(settings.bytes) / (1024.0 * 1024.0 * 1024.0),
                direct_latency.size());
    std::printf(
        "  throughput  direct %.2f GiB/s  proxied %.2f GiB/s  ratio %.1f%%  (target >= 80%%)"
        " %s\n",
        rate_direct, rate_proxied, ratio * 100.0, ratio >= 0.8 ? "ok" : "MISSED");
    std::printf("  cpu/GiB     direct %.2f s  proxied %.2f s  (all threads of the process)\n",
                median(direct_cpu), median(proxied_cpu));
    std::printf(
        "  first byte  direct %.1f us  proxied %.1f us  added %.1f us  (target < 1000 us)"
        " %s\n",
        lat_direct, lat_proxied, added_us, added_us < 1000.0 ? "ok" : "MISSED");
    return ratio >= 0.8 && added_us < 1000.0;
}

}  // namespace

int main(int argc, char **argv) {
    Settings settings;
    try {
        settings = parse(argc, argv);
    } catch (const std::exception &error) {
        std::fprintf(stderr, "connect_proxy_bench: %s\n", error.what());
        return 2;
    }
    const Server server;
    bool met = true;
    for (const bool use_splice : settings.splice_modes)
        met = run(settings, use_splice, server) && met;
    return met ? 0 : 1;
}
