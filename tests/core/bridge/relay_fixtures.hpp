// Fixtures of the bridge's tests (host_listener_test, handed_socket_test): a real loopback
// server, the real tea-bridge-relay (TEA_BRIDGE_RELAY) on a socket of its own, and clients.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tea/bridge_preface.hpp>
#include <tea/stream_relay.hpp>
#include <thread>
#include <vector>

#include "util/fd.hpp"

namespace bridge_fixtures {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

enum class ServerMode { http, sink, never_read };

// A loopback server on 127.0.0.1 with a port the system picks.
class LoopbackServer {
   public:
    explicit LoopbackServer(ServerMode mode) : mode_(mode) {
        listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        EXPECT_EQ(::listen(listener_.get(), 1024), 0);
        socklen_t size = sizeof a;
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr *>(&a), &size);
        port_ = ntohs(a.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    LoopbackServer(const LoopbackServer &) = delete;
    LoopbackServer &operator=(const LoopbackServer &) = delete;
    ~LoopbackServer() {
        stopping_ = true;
        ::shutdown(listener_.get(), SHUT_RDWR);
        acceptor_.join();
        for (auto &fd : held_) {
            ::shutdown(fd.get(), SHUT_RDWR);
        }
        for (auto &t : workers_) {
            t.join();
        }
    }
    [[nodiscard]] std::uint16_t port() const { return port_; }
    [[nodiscard]] std::uint64_t received() const { return received_; }

   private:
    void accept_loop() {
        for (;;) {
            const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0 || stopping_) {
                if (fd >= 0) {
                    ::close(fd);
                }
                return;
            }
            held_.emplace_back(fd);
            if (mode_ != ServerMode::never_read) {
                workers_.emplace_back([this, fd] { serve(fd); });
            }
        }
    }
    void serve(int fd) {
        std::string head;
        char buffer[65536];
        for (;;) {
            const auto n = ::recv(fd, buffer, sizeof buffer, 0);
            if (n <= 0) {
                ::shutdown(fd, SHUT_RDWR);  // a client's end ends the connection, as servers do
                return;
            }
            received_ += static_cast<std::uint64_t>(n);
            if (mode_ == ServerMode::http) {
                head.append(buffer, static_cast<std::size_t>(n));
                if (head.find("\r\n\r\n") != std::string::npos) {
                    const std::string reply =
                        "HTTP/1.0 200 OK\r\nContent-Length: 17\r\n\r\nhello from inside";
                    (void)!::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
                    ::shutdown(fd, SHUT_WR);
                    return;
                }
            }
        }
    }

    ServerMode mode_;
    tea::UniqueFd listener_;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<std::uint64_t> received_{0};
    std::vector<tea::UniqueFd> held_;
    std::vector<std::thread> workers_;
    std::thread acceptor_;
};

// The real tea-bridge-relay on a socket in a directory of its own.
class Relay {
   public:
    explicit Relay(int idle_ms = 60'000) {
        char pattern[] = "/tmp/tea-bridge-test-XXXXXX";
        dir_ = ::mkdtemp(pattern);
        socket_ = dir_ / "bridge.sock";
        pid_ = ::fork();
        if (pid_ == 0) {
            const std::string idle = std::to_string(idle_ms);
            ::execl(TEA_BRIDGE_RELAY, TEA_BRIDGE_RELAY, "--socket", socket_.c_str(), "--idle-ms",
                    idle.c_str(), nullptr);
            ::_exit(127);
        }
        // Serving, not only bound: the relay binds its socket's name before it listens, and a
        // client that connects in between is refused (a test that then waits for its close
        // would wait on no connection); a count of its descriptors taken before its epoll set
        // exists would be one short.
        for (int i = 0; i < 500 && !(listening() && polling()) && !exited(); ++i) {
            std::this_thread::sleep_for(10ms);
        }
    }
    Relay(const Relay &) = delete;
    Relay &operator=(const Relay &) = delete;
    ~Relay() {
        if (status_ < 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        fs::remove_all(dir_);
    }
    bool exited() {
        int status = 0;
        if (status_ < 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
            status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        return status_ >= 0;
    }
    // Whether /proc/net/unix lists the relay's socket with the listening flag (__SO_ACCEPTCON).
    [[nodiscard]] bool listening() const {
        std::ifstream in{"/proc/net/unix"};
        std::string line;
        std::getline(in, line);  // the heading
        while (std::getline(in, line)) {
            const std::size_t path = line.rfind(' ');
            if (path == std::string::npos || line.substr(path + 1) != socket_.string()) {
                continue;
            }
            std::istringstream fields{line};
            std::string slot, references, protocol, flags;
            fields >> slot >> references >> protocol >> flags;
            if ((std::stoul(flags, nullptr, 16) & 0x10000U) != 0) {
                return true;
            }
        }
        return false;
    }
    // Whether the relay holds its epoll set, which it makes once it listens.
    [[nodiscard]] bool polling() const {
        std::error_code error;
        const fs::path fds = "/proc/" + std::to_string(pid_) + "/fd";
        for (const auto &entry : fs::directory_iterator{fds, error}) {
            if (fs::read_symlink(entry.path(), error).string() == "anon_inode:[eventpoll]") {
                return true;
            }
        }
        return false;
    }
    [[nodiscard]] int status() const { return status_; }
    [[nodiscard]] const fs::path &socket() const { return socket_; }
    [[nodiscard]] std::size_t open_descriptors() const {
        const fs::path fds = "/proc/" + std::to_string(pid_) + "/fd";
        return static_cast<std::size_t>(
            std::distance(fs::directory_iterator{fds}, fs::directory_iterator{}));
    }
    [[nodiscard]] long resident_kib() const {
        std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("VmRSS:", 0) == 0) {
                return std::stol(line.substr(6));
            }
        }
        return -1;
    }

   private:
    fs::path dir_;
    fs::path socket_;
    pid_t pid_ = -1;
    int status_ = -1;
};

inline tea::UniqueFd connect_to(std::uint16_t port, bool blocking = true) {
    tea::UniqueFd fd{
        ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (blocking ? 0 : SOCK_NONBLOCK), 0)};
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int rc = ::connect(fd.get(), reinterpret_cast<sockaddr *>(&a), sizeof a);
    if (rc != 0 && !(errno == EINPROGRESS && !blocking)) {
        return {};
    }
    return fd;
}

// One HTTP request; the whole reply, or what arrived before `limit`.
inline std::string request(std::uint16_t port, std::chrono::milliseconds limit = 5000ms) {
    const tea::UniqueFd fd = connect_to(port);
    if (!fd) {
        return "(no connection)";
    }
    const std::string get = "GET / HTTP/1.0\r\nHost: x\r\n\r\n";
    (void)!::send(fd.get(), get.data(), get.size(), MSG_NOSIGNAL);
    std::string reply;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    char buffer[4096];
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{fd.get(), POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
            return reply;
        }
        const auto n = ::recv(fd.get(), buffer, sizeof buffer, 0);
        if (n <= 0) {
            return reply;
        }
        reply.append(buffer, static_cast<std::size_t>(n));
    }
}

inline tea::bridge_preface::Destination to(const LoopbackServer &service) {
    return {tea::bridge_preface::Family::ipv4, service.port()};
}

// A blocking connection straight to the relay's socket, as a target in the call could open, with
// the preface `bytes` written first.
inline tea::UniqueFd connect_relay(const Relay &relay, const std::string &bytes) {
    tea::UniqueFd fd{tea::stream_relay::connect_unix(relay.socket().string())};
    if (fd) {
        ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
    }
    if (fd && !bytes.empty()) {
        (void)!::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    }
    return fd;
}

inline std::string preface_of(const LoopbackServer &service) {
    const auto bytes = tea::bridge_preface::encode(to(service));
    return {bytes.begin(), bytes.end()};
}

// Whether the peer closed `fd` within `limit` (true), rather than keeping it open.
inline bool closed_within(int fd, std::chrono::milliseconds limit) {
    pollfd p{fd, POLLIN, 0};
    char c = 0;
    return ::poll(&p, 1, static_cast<int>(limit.count())) == 1 &&
           ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

inline std::uint16_t free_port() {
    LoopbackServer probe(ServerMode::never_read);
    return probe.port();
}

inline bool ends_with_body(const std::string &reply) {
    return reply.size() >= 17 && reply.substr(reply.size() - 17) == "hello from inside";
}

// Polls `ready` until it holds or `limit` passes; whether it held.
template <typename Ready>
inline bool wait_for(Ready &&ready, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!ready()) {
        if (std::chrono::steady_clock::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(5ms);
    }
    return true;
}
}  // namespace bridge_fixtures
