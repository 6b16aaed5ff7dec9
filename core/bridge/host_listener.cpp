#include "bridge/host_listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bridge/handed_socket.hpp"
#include "bridge/relay_socket.hpp"
#include "util/error.hpp"

namespace tea::bridge {
namespace {

// Binds 127.0.0.1:port, or returns -1 with errno set.
int bind_loopback(std::uint16_t port) {
    UniqueFd fd{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
    if (!fd) {
        return -1;
    }
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd.get(), reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
        ::listen(fd.get(), SOMAXCONN) != 0) {
        return -1;
    }
    return fd.release();
}

std::uint16_t bound_port(int fd) {
    sockaddr_in a{};
    socklen_t size = sizeof a;
    if (::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &size) != 0) {
        throw runtime_failure("bridge: cannot read the host listener's port: " + errno_text(errno));
    }
    return ntohs(a.sin_port);
}

// A connection to the relay with the preface written, or -1 (errno EAGAIN: the relay's backlog
// is full, try again).
int connect_relay(const std::string &socket,
                  const std::array<std::uint8_t, bridge_preface::kBytes> &preface) {
    const int fd = connect_relay_socket(socket);
    if (fd < 0) {
        return -1;
    }
    // A new connection's empty buffer takes three bytes at once.
    if (::send(fd, preface.data(), preface.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(preface.size())) {
        ::close(fd);
        errno = ECONNREFUSED;
        return -1;
    }
    return fd;
}

}  // namespace

HostListener::HostListener(HostListenerOptions options) : options_(std::move(options)) {
    const std::string socket = options_.relay_socket.string();
    if (socket.empty() || socket.size() >= sizeof(sockaddr_un::sun_path)) {
        throw runtime_failure(
            "bridge: the relay's socket path is empty or too long for a Unix "
            "socket: " +
            socket);
    }
    if (options_.wanted_port != 0) {
        listener_.reset(bind_loopback(options_.wanted_port));
    }
    if (!listener_) {
        // The service's own number is taken on the host (or privileged): the system picks one,
        // and the call is configured for that one.
        listener_.reset(bind_loopback(0));
    }
    if (!listener_) {
        throw runtime_failure("bridge: cannot listen on 127.0.0.1: " + errno_text(errno));
    }
    port_ = bound_port(listener_.get());
    stop_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!stop_) {
        throw runtime_failure("bridge: eventfd: " + errno_text(errno));
    }
    if (options_.service.port == 0) {
        options_.service.port = options_.wanted_port;
    }
    options_.service.hand_over = options_.call_network >= 0;
    if (options_.call_network >= 0) {
        // A relay that never answers (a socket the target bound in its place) would hold every
        // client behind the one waiting.
        if (options_.limits.wait.count() == 0) {
            options_.limits.wait = kHandOverWait;
        }
        carrier_ = std::thread([this, socket] { carry_handed(socket); });
        return;
    }
    const auto preface = bridge_preface::encode(options_.service);
    carrier_ = std::thread([this, socket, preface] {
        const std::vector<int> listeners{listener_.get()};
        stream_relay::serve(
            listeners, [&socket, &preface](int) { return connect_relay(socket, preface); },
            options_.limits, stop_.get(), &counts_);
    });
}

void HostListener::carry_handed(const std::string &socket) {
    const ServiceEnd end{options_.service, options_.call_network};
    std::optional<HandOver> handing;
    const auto connect = [&](int, stream_relay::Wake &wake) {
        if (wake.first || !handing) {
            handing.emplace(socket, end);
        }
        switch (handing->advance(wake)) {
            case HandOver::State::waiting:
                errno = EAGAIN;
                return -1;
            case HandOver::State::ready: {
                const int fd = handing->take().release();
                handing.reset();
                // The relay that handed it, of the target's identity, may have kept a copy.
                wake.shared = true;
                return fd;
            }
            case HandOver::State::refused:
                break;
        }
        {
            const std::lock_guard lock{refusal_mutex_};
            last_refusal_ = handing->refusal();
        }
        handing.reset();
        errno = ECONNREFUSED;  // the client's connection is closed
        return -1;
    };
    const std::vector<int> listeners{listener_.get()};
    stream_relay::serve(listeners, connect, options_.limits, stop_.get(), &counts_);
}

std::string HostListener::last_refusal() const {
    const std::lock_guard lock{refusal_mutex_};
    return last_refusal_;
}

void HostListener::stop() {
    if (!carrier_.joinable()) {
        return;
    }
    const std::uint64_t one = 1;
    (void)!::write(stop_.get(), &one, sizeof one);
    carrier_.join();
    listener_.reset();
}

HostListener::~HostListener() {
    stop();
}

}  // namespace tea::bridge
