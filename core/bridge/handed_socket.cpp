#include "bridge/handed_socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "bridge/relay_socket.hpp"
#include "util/error.hpp"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71  // Linux 5.14
#endif

namespace tea::bridge {
namespace {

// Room for more descriptors than one, so that a relay sending several is seen doing so (and
// each is closed) rather than cut short.
constexpr std::size_t kRoomForDescriptors = 16;

std::string port_text(std::uint16_t port) {
    return std::to_string(port);
}

std::string family_text(int domain) {
    return domain == AF_INET    ? "IPv4"
           : domain == AF_INET6 ? "IPv6"
           : domain == AF_UNIX  ? "a Unix socket"
                                : "address family " + std::to_string(domain);
}

int option(int fd, int level, int name, int &value) {
    socklen_t size = sizeof value;
    return ::getsockopt(fd, level, name, &value, &size);
}

// The peer's address and port when it is the service's loopback address; a refusal otherwise.
std::string peer_refusal(int fd, const ServiceEnd &end) {
    sockaddr_storage peer{};
    socklen_t size = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &size) != 0) {
        return "the handed socket's peer cannot be read: " + errno_text(errno);
    }
    const std::uint16_t want = end.destination.port;
    if (peer.ss_family == AF_INET) {
        const auto &a = reinterpret_cast<const sockaddr_in &>(peer);
        char text[INET_ADDRSTRLEN] = {};
        ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
        if (a.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && ntohs(a.sin_port) == want) {
            return {};
        }
        return std::string{"the handed socket is connected to "} + text + " port " +
               port_text(ntohs(a.sin_port)) + ", not to 127.0.0.1 port " + port_text(want);
    }
    const auto &a = reinterpret_cast<const sockaddr_in6 &>(peer);
    char text[INET6_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
    if (IN6_IS_ADDR_LOOPBACK(&a.sin6_addr) && ntohs(a.sin6_port) == want) {
        return {};
    }
    return std::string{"the handed socket is connected to "} + text + " port " +
           port_text(ntohs(a.sin6_port)) + ", not to ::1 port " + port_text(want);
}

// The network namespace's cookie of socket `fd` (SO_NETNS_COOKIE, no privilege needed).
std::optional<std::uint64_t> network_cookie(int fd) {
    std::uint64_t cookie = 0;
    socklen_t size = sizeof cookie;
    if (::getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &size) != 0) {
        return std::nullopt;
    }
    return cookie;
}

// "" when socket `fd` is in the namespace `call_network` names, a refusal otherwise.
std::string network_refusal(int fd, int call_network) {
    struct stat call {};
    if (::fstat(call_network, &call) != 0) {
        return "the call's network namespace cannot be read: " + errno_text(errno);
    }
    const UniqueFd its_network{::ioctl(fd, SIOCGSKNS)};
    if (its_network) {
        struct stat its {};
        if (::fstat(its_network.get(), &its) != 0) {
            return "the handed socket's network namespace cannot be read: " + errno_text(errno);
        }
        if (its.st_dev != call.st_dev || its.st_ino != call.st_ino) {
            return "the handed socket is in network namespace " + std::to_string(its.st_ino) +
                   ", not the call's (" + std::to_string(call.st_ino) + "): refused";
        }
        return {};
    }
    const int error = errno;
    // SIOCGSKNS needs CAP_NET_ADMIN over the socket's network: a runtime not root lacks it over
    // its own (the opt-out backend's call shares it). That network alone is compared by the
    // cookie the kernel gives any socket of it.
    struct stat own {};
    const bool call_is_own = ::stat("/proc/self/ns/net", &own) == 0 && own.st_dev == call.st_dev &&
                             own.st_ino == call.st_ino;
    if (error != EPERM || !call_is_own) {
        return "the handed socket's network namespace cannot be read (SIOCGSKNS): " +
               errno_text(error);
    }
    const UniqueFd probe{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    const auto its = network_cookie(fd);
    const auto ours = probe ? network_cookie(probe.get()) : std::nullopt;
    if (!its || !ours) {
        return "the handed socket's network namespace cannot be read (SO_NETNS_COOKIE): " +
               errno_text(errno);
    }
    if (*its != *ours) {
        return "the handed socket is in another network namespace than the call's: refused";
    }
    return {};
}

}  // namespace

Received receive_one_descriptor(int unix_fd) {
    Received out;
    char byte = 0;
    iovec data{&byte, 1};
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kRoomForDescriptors)> control{};
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    // Close-on-exec from the start: a descriptor of the target's must not leak into a process
    // the runtime starts.
    const auto n = ::recvmsg(unix_fd, &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return out;
    }
    out.state = Received::State::refused;
    if (n < 0) {
        out.refusal = "the relay's answer cannot be read: " + errno_text(errno);
        return out;
    }
    // Every descriptor that arrived is owned here, so each is closed whatever is refused.
    std::vector<HandedFd> received;
    for (cmsghdr *c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int fd = -1;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            received.emplace_back(fd);
        }
    }
    if (n == 0) {
        out.refusal = "the relay closed its answer without a connection (the service refused it)";
        return out;
    }
    // A relay that sends more than there is room for would leave descriptors uncounted.
    if ((message.msg_flags & MSG_CTRUNC) != 0) {
        out.refusal = "the relay sent more descriptors than one (cut short): refused";
        return out;
    }
    if (received.size() != 1) {
        out.refusal =
            "the relay sent " + std::to_string(received.size()) + " descriptors, not one: refused";
        return out;
    }
    out.state = Received::State::received;
    out.fd = std::move(received.front());
    return out;
}

SocketCheck check_service_socket(int fd, const ServiceEnd &end) {
    const auto refused = [](std::string sentence) {
        return SocketCheck{SocketCheck::State::refused, std::move(sentence)};
    };
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        return refused("the handed descriptor cannot be read: " + errno_text(errno));
    }
    // A pipe or a file would take the client's bytes somewhere other than the service.
    if (!S_ISSOCK(st.st_mode)) {
        return refused("the handed descriptor is not a socket: refused");
    }
    const int want_domain =
        end.destination.family == bridge_preface::Family::ipv4 ? AF_INET : AF_INET6;
    int domain = 0;
    int type = 0;
    int protocol = 0;
    if (option(fd, SOL_SOCKET, SO_DOMAIN, domain) != 0 ||
        option(fd, SOL_SOCKET, SO_TYPE, type) != 0 ||
        option(fd, SOL_SOCKET, SO_PROTOCOL, protocol) != 0) {
        return refused("the handed socket's kind cannot be read: " + errno_text(errno));
    }
    // A Unix socket could lead to any process the target reaches, not to the service's port.
    if (domain != want_domain || type != SOCK_STREAM || protocol != IPPROTO_TCP) {
        return refused("the handed socket is not TCP over " + family_text(want_domain) + " (" +
                       family_text(domain) + ", type " + std::to_string(type) + ", protocol " +
                       std::to_string(protocol) + "): refused");
    }
    // A socket of another network (the host's, had the target one) would make the bridge a
    // route there: the socket's namespace must be the call's.
    auto sentence = network_refusal(fd, end.network);
    if (!sentence.empty()) {
        return refused(std::move(sentence));
    }
    int error = 0;
    if (option(fd, SOL_SOCKET, SO_ERROR, error) != 0 || error != 0) {
        return refused("the relay's connection to the service failed: " +
                       errno_text(error != 0 ? error : errno));
    }
    tcp_info info{};
    socklen_t size = sizeof info;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) != 0) {
        return refused("the handed socket's state cannot be read: " + errno_text(errno));
    }
    if (info.tcpi_state == TCP_SYN_SENT) {
        return {SocketCheck::State::connecting, {}};
    }
    // A listening or closed socket has no service at its other end.
    if (info.tcpi_state != TCP_ESTABLISHED && info.tcpi_state != TCP_CLOSE_WAIT) {
        return refused("the handed socket is not connected (TCP state " +
                       std::to_string(info.tcpi_state) + "): refused");
    }
    // Connected elsewhere in the call's network, it would reach another of the target's ports.
    sentence = peer_refusal(fd, end);
    if (!sentence.empty()) {
        return refused(std::move(sentence) + ": refused");
    }
    return {SocketCheck::State::connected, {}};
}

HandOver::HandOver(std::string relay_socket, const ServiceEnd &end)
    : relay_socket_(std::move(relay_socket)), end_(end) {
    end_.destination.hand_over = true;
}

HandOver::State HandOver::refuse(std::string sentence) {
    refusal_ = std::move(sentence);
    relay_.reset();
    service_.reset();
    return State::refused;
}

HandOver::State HandOver::advance(stream_relay::Wake &wake) {
    if (!relay_ && !service_) {
        relay_.reset(connect_relay_socket(relay_socket_));
        if (!relay_) {
            if (errno == EAGAIN) {
                return State::waiting;  // the relay's backlog is full: tried again shortly
            }
            return refuse("cannot connect to the relay's socket " + relay_socket_ + ": " +
                          errno_text(errno));
        }
        const auto preface = bridge_preface::encode(end_.destination);
        // A new connection's empty buffer takes three bytes at once.
        if (::send(relay_.get(), preface.data(), preface.size(), MSG_NOSIGNAL) !=
            static_cast<ssize_t>(preface.size())) {
            return refuse("cannot ask the relay for a connection: " + errno_text(errno));
        }
    }
    if (relay_) {
        auto received = receive_one_descriptor(relay_.get());
        if (received.state == Received::State::waiting) {
            wake = {wake.first, relay_.get(), EPOLLIN};
            return State::waiting;
        }
        if (received.state == Received::State::refused) {
            return refuse(std::move(received.refusal));
        }
        relay_.reset();
        service_ = std::move(received.fd);
        // A socket handed in blocking mode (the fake relay of a test, or a target's in the
        // relay's place) would hold a caller that waits on it: the host's copy is made
        // non-blocking as soon as it arrives. The sender may set it blocking again through a copy
        // it kept, so the host listener never relies on this alone (stream_relay's Wake::shared).
        const int flags = ::fcntl(service_.get(), F_GETFL);
        if (flags < 0 || ::fcntl(service_.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
            return refuse("the handed descriptor cannot be made non-blocking: " +
                          errno_text(errno));
        }
    }
    auto check = check_service_socket(service_.get(), end_);
    if (check.state == SocketCheck::State::refused) {
        return refuse(std::move(check.refusal));
    }
    if (check.state == SocketCheck::State::connecting) {
        wake = {wake.first, service_.get(), EPOLLOUT};
        return State::waiting;
    }
    return State::ready;
}

HandedFd hand_over(const std::string &relay_socket, const ServiceEnd &end,
                   std::chrono::milliseconds timeout, int stop_fd, std::string &refusal) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + timeout;
    HandOver handing(relay_socket, end);
    for (;;) {
        stream_relay::Wake wake;
        const auto state = handing.advance(wake);
        if (state == HandOver::State::ready) {
            return handing.take();
        }
        if (state == HandOver::State::refused) {
            refusal = handing.refusal();
            return {};
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            refusal = "the relay handed no connection to the service within " +
                      std::to_string(timeout.count()) + " ms";
            return {};
        }
        std::array<pollfd, 2> fds{{{wake.fd, static_cast<short>(wake.events), 0},
                                   {stop_fd, POLLIN, 0}}};  // poll skips fd -1
        // No descriptor to wait on (the relay's backlog full): tried again shortly.
        const int wait = wake.fd < 0 ? std::min<int>(2, static_cast<int>(left))
                                     : static_cast<int>(std::min<long>(left, 60'000));
        if (::poll(fds.data(), fds.size(), wait) > 0 && (fds[1].revents & POLLIN) != 0) {
            refusal = "the call ended before the relay handed a connection";
            return {};
        }
    }
}

}  // namespace tea::bridge
