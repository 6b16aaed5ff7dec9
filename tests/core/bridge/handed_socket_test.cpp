// The relay's connection to the service, handed to the host (core/bridge/handed_socket): the real
// tea-bridge-relay hands a connected socket and keeps no copy, the host listener then carries its
// clients in one hop with the relay holding nothing; and every lie a relay of the target's
// identity could hand instead (a pipe, a Unix socket, a socket to another port or of another
// network, a listening socket, two descriptors, no answer) is refused and closed, a pipe never
// given a client's byte, against the control of a genuine socket handed the same way.
#include "bridge/handed_socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <tea/send_descriptors.hpp>
#include <thread>
#include <vector>

#include "bridge/host_listener.hpp"
#include "relay_fixtures.hpp"
#include "support/socket_io.hpp"
#include "util/fd.hpp"

namespace {

using namespace bridge_fixtures;
using tea::UniqueFd;
using tea::bridge::ServiceEnd;

UniqueFd own_network() {
    return UniqueFd{::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)};
}

ServiceEnd end_for(const LoopbackServer &service, const UniqueFd &network) {
    return {{tea::bridge_preface::Family::ipv4, service.port(), true}, network.get()};
}

// Sends `fds` over `unix_fd` as the relay hands its connection.
void send_descriptors(int unix_fd, const std::vector<int> &fds) {
    ASSERT_EQ(tea::send_descriptors(unix_fd, fds), 1) << std::strerror(errno);
}

// A relay of the target's making on a socket of its own: reads each connection's preface and
// answers with `answer(connection)`, then closes it.
class FakeRelay {
   public:
    explicit FakeRelay(std::function<void(int)> answer) : answer_(std::move(answer)) {
        char pattern[] = "/tmp/tea-handed-test-XXXXXX";
        dir_ = ::mkdtemp(pattern);
        socket_ = (dir_ / "bridge.sock").string();
        listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::memcpy(a.sun_path, socket_.data(), socket_.size());
        EXPECT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        EXPECT_EQ(::listen(listener_.get(), 16), 0);
        thread_ = std::thread([this] { serve(); });
    }
    FakeRelay(const FakeRelay &) = delete;
    FakeRelay &operator=(const FakeRelay &) = delete;
    ~FakeRelay() {
        stopping_ = true;
        thread_.join();
        fs::remove_all(dir_);
    }
    [[nodiscard]] const std::string &socket() const { return socket_; }

   private:
    void serve() {
        while (!stopping_) {
            pollfd p{listener_.get(), POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) {
                continue;
            }
            const UniqueFd c{::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC)};
            std::array<char, tea::bridge_preface::kBytes> preface{};
            if (c && ::recv(c.get(), preface.data(), preface.size(), MSG_WAITALL) ==
                         static_cast<ssize_t>(preface.size())) {
                answer_(c.get());
            }
        }
    }

    std::function<void(int)> answer_;
    fs::path dir_;
    std::string socket_;
    UniqueFd listener_;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

// What hand_over says of what `relay` hands ("" when it took the socket).
std::string refusal_of(const FakeRelay &relay, const ServiceEnd &end) {
    std::string refusal;
    const auto fd = tea::bridge::hand_over(relay.socket(), end, 2000ms, -1, refusal);
    EXPECT_EQ(fd.valid(), refusal.empty()) << refusal;
    return refusal;
}

// Sends one HTTP request over `fd` and reads the reply to its end.
std::string request_over(int fd) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    const std::string get = "GET / HTTP/1.0\r\nHost: x\r\n\r\n";
    (void)!::send(fd, get.data(), get.size(), MSG_NOSIGNAL);
    std::string reply;
    char buffer[4096];
    for (pollfd p{fd, POLLIN, 0}; ::poll(&p, 1, 5000) == 1;) {
        const auto n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
            break;
        }
        reply.append(buffer, static_cast<std::size_t>(n));
    }
    return reply;
}

TEST(HandOver, TheRealRelayHandsAConnectedSocketAndKeepsNoCopy) {
    LoopbackServer service(ServerMode::http);
    Relay relay;
    const auto network = own_network();
    const std::size_t before = relay.open_descriptors();
    std::string refusal;
    const auto fd = tea::bridge::hand_over(relay.socket().string(), end_for(service, network),
                                           2000ms, -1, refusal);
    ASSERT_TRUE(fd) << refusal;
    // The relay closed its connection to the service and the host's to it: nothing of the
    // connection stays in the target's process.
    EXPECT_TRUE(wait_for([&] { return relay.open_descriptors() == before; }, 2000ms))
        << relay.open_descriptors() << " descriptors, " << before << " before";
    EXPECT_TRUE(ends_with_body(request_over(fd.get())));
}

TEST(HandOverAttack, ControlAGenuineSocketHandedTheSameWayIsTaken) {
    LoopbackServer service(ServerMode::http);
    const auto network = own_network();
    FakeRelay relay([&](int c) {
        const auto genuine = connect_to(service.port());
        send_descriptors(c, {genuine.get()});
    });
    EXPECT_EQ(refusal_of(relay, end_for(service, network)), "");
}

TEST(HandOverAttack, APipeIsRefused) {
    LoopbackServer service(ServerMode::http);
    const auto network = own_network();
    FakeRelay relay([](int c) {
        int p[2];
        ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
        send_descriptors(c, {p[1]});
        ::close(p[0]);
        ::close(p[1]);
    });
    EXPECT_NE(refusal_of(relay, end_for(service, network)).find("not a socket"), std::string::npos);
}

// Control: the pipe does arrive; the check, not the receipt, is what refuses it.
TEST(HandOverAttack, ControlWithoutTheCheckAHandedPipeArrivesAsADescriptor) {
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    const UniqueFd host{pair[0]};
    const UniqueFd relay{pair[1]};
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    const UniqueFd read_end{p[0]};
    const UniqueFd write_end{p[1]};
    send_descriptors(relay.get(), {write_end.get()});
    auto received = tea::bridge::receive_one_descriptor(host.get());
    ASSERT_EQ(received.state, tea::bridge::Received::State::received) << received.refusal;
    EXPECT_EQ(::write(received.fd.get(), "x", 1), 1);  // a client's bytes would reach the pipe
    EXPECT_EQ(::fcntl(received.fd.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

TEST(HandOverAttack, AUnixSocketIsRefused) {
    LoopbackServer service(ServerMode::http);
    const auto network = own_network();
    FakeRelay relay([](int c) {
        int pair[2];
        ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        send_descriptors(c, {pair[0]});
        ::close(pair[0]);
        ::close(pair[1]);
    });
    EXPECT_NE(refusal_of(relay, end_for(service, network)).find("not TCP over IPv4"),
              std::string::npos);
}

TEST(HandOverAttack, ASocketToAnotherPortIsRefused) {
    LoopbackServer service(ServerMode::http);
    LoopbackServer other(ServerMode::http);
    const auto network = own_network();
    FakeRelay relay([&](int c) {
        const auto elsewhere = connect_to(other.port());
        send_descriptors(c, {elsewhere.get()});
    });
    const auto refusal = refusal_of(relay, end_for(service, network));
    EXPECT_NE(refusal.find("connected to 127.0.0.1 port " + std::to_string(other.port()) +
                           ", not to 127.0.0.1 port " + std::to_string(service.port())),
              std::string::npos)
        << refusal;
}

// A listening TCP socket on 127.0.0.1 at a port the system picks.
UniqueFd listening_socket() {
    UniqueFd fd{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd.get(), 16), 0);
    return fd;
}

std::uint16_t port_of(const UniqueFd &fd) {
    sockaddr_in a{};
    socklen_t size = sizeof a;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr *>(&a), &size);
    return ntohs(a.sin_port);
}

TEST(HandOverAttack, AListeningSocketIsRefused) {
    LoopbackServer service(ServerMode::http);
    const auto network = own_network();
    FakeRelay relay([](int c) {
        const auto listening = listening_socket();
        send_descriptors(c, {listening.get()});
    });
    EXPECT_NE(refusal_of(relay, end_for(service, network)).find("not connected"),
              std::string::npos);
}

TEST(HandOverAttack, TwoDescriptorsAreRefusedAndBothClosed) {
    const auto service = listening_socket();
    const auto network = own_network();
    FakeRelay relay([&](int c) {
        const auto first = connect_to(port_of(service));
        const auto second = connect_to(port_of(service));
        send_descriptors(c, {first.get(), second.get()});
    });
    const ServiceEnd end{{tea::bridge_preface::Family::ipv4, port_of(service), true},
                         network.get()};
    EXPECT_NE(refusal_of(relay, end).find("2 descriptors, not one"), std::string::npos);
    // The fake relay closed its copies after sending, so the service's end of each sees its
    // end only once the host closed both.
    for (int i = 0; i < 2; ++i) {
        const UniqueFd accepted{::accept4(service.get(), nullptr, nullptr, SOCK_CLOEXEC)};
        pollfd p{accepted.get(), POLLIN, 0};
        char byte = 0;
        EXPECT_EQ(::poll(&p, 1, 2000), 1);
        EXPECT_EQ(::recv(accepted.get(), &byte, 1, MSG_DONTWAIT), 0);
    }
}

TEST(HandOverAttack, ASocketOfAnotherNetworkIsRefused) {
    LoopbackServer service(ServerMode::http);
    const auto network = own_network();
    UniqueFd foreign;
    std::thread([&] {
        // A network namespace of this thread's own, as a target with one would have.
        if (::unshare(CLONE_NEWNET) == 0) {
            foreign.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        }
    }).join();
    if (!foreign) {
        GTEST_SKIP() << "cannot make a network namespace here (needs CAP_SYS_ADMIN)";
    }
    FakeRelay relay([&](int c) { send_descriptors(c, {foreign.get()}); });
    const auto refusal = refusal_of(relay, end_for(service, network));
    EXPECT_NE(refusal.find("not the call's"), std::string::npos) << refusal;
}

TEST(HandOverAttack, ARelayThatNeverAnswersIsWaitedForNoLongerThanTheTimeout) {
    LoopbackServer service(ServerMode::http);
    const auto network = own_network();
    FakeRelay relay([](int) { std::this_thread::sleep_for(600ms); });
    std::string refusal;
    const auto start = std::chrono::steady_clock::now();
    const auto fd =
        tea::bridge::hand_over(relay.socket(), end_for(service, network), 200ms, -1, refusal);
    EXPECT_FALSE(fd);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 550ms);
    EXPECT_NE(refusal.find("within 200 ms"), std::string::npos) << refusal;
}

// Whether `holds` comes true of the relay's descriptors within 2 s while a client of a host
// listener made with `options` has its connection open and carried to `sink`.
template <typename Holds>
bool while_carrying(Relay &relay, LoopbackServer &sink,
                    const tea::bridge::HostListenerOptions &options, Holds &&holds) {
    tea::bridge::HostListener bridge(options);
    const auto client = connect_to(bridge.port());
    const std::uint64_t received = sink.received();
    (void)!::send(client.get(), "payload", 7, MSG_NOSIGNAL);
    EXPECT_TRUE(wait_for([&] { return sink.received() >= received + 7; }, 2000ms));
    return wait_for([&] { return holds(relay.open_descriptors()); }, 2000ms);
}

TEST(HostListenerHandOver, CarriesInOneHopWithTheRelayHoldingNothing) {
    LoopbackServer sink(ServerMode::sink);
    Relay relay;
    const auto network = own_network();
    const std::size_t before = relay.open_descriptors();
    const auto service = end_for(sink, network).destination;
    // Handed over: the relay holds nothing of the open connection.
    EXPECT_TRUE(while_carrying(relay, sink,
                               {.wanted_port = 0,
                                .service = service,
                                .relay_socket = relay.socket(),
                                .call_network = network.get()},
                               [&](std::size_t now) { return now == before; }));
    // Control, the relay carrying: it holds the pair (two connections and two pipes).
    EXPECT_TRUE(while_carrying(
        relay, sink, {.wanted_port = 0, .service = service, .relay_socket = relay.socket()},
        [&](std::size_t now) { return now >= before + 6; }));
}

TEST(HostListenerHandOver, AHandedPipeGetsNoByteOfTheClientAndIsNamed) {
    LoopbackServer service(ServerMode::http);
    const auto network = own_network();
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
    const UniqueFd read_end{p[0]};
    const UniqueFd write_end{p[1]};
    FakeRelay relay([&](int c) { send_descriptors(c, {write_end.get()}); });
    tea::bridge::HostListener bridge({.wanted_port = 0,
                                      .service = end_for(service, network).destination,
                                      .relay_socket = relay.socket(),
                                      .call_network = network.get()});
    EXPECT_EQ(request(bridge.port()), "");
    char c = 0;
    EXPECT_EQ(::read(read_end.get(), &c, 1), -1);  // nothing written: EAGAIN
    EXPECT_NE(bridge.last_refusal().find("not a socket"), std::string::npos)
        << bridge.last_refusal();
}

TEST(HostListenerHandOver, ControlAGenuineSocketHandedTheSameWayCarriesTheRequest) {
    LoopbackServer service(ServerMode::http);
    const auto network = own_network();
    FakeRelay relay([&](int c) {
        const auto genuine = connect_to(service.port());
        send_descriptors(c, {genuine.get()});
    });
    tea::bridge::HostListener bridge({.wanted_port = 0,
                                      .service = end_for(service, network).destination,
                                      .relay_socket = relay.socket(),
                                      .call_network = network.get()});
    EXPECT_TRUE(ends_with_body(request(bridge.port())));
    EXPECT_EQ(bridge.last_refusal(), "");
}

// A host listener whose relay, of the target's making, answers with `hand(connection to the
// relay, the service's port)`, a service of the test's that reads nothing unless told, and one
// client the listener carries over the handed connection.
class CarriedOverAHandedConnection {
   public:
    explicit CarriedOverAHandedConnection(std::function<void(int, std::uint16_t)> hand,
                                          int service_buffer = 0)
        : service_listener_{tea::test::listen_loopback(AF_INET, service_port_)},
          network_{own_network()},
          relay_{[this, hand = std::move(hand)](int c) { hand(c, service_port_); }} {
        if (service_buffer > 0) {
            EXPECT_EQ(::setsockopt(service_listener_.get(), SOL_SOCKET, SO_RCVBUF, &service_buffer,
                                   sizeof service_buffer),
                      0);
        }
        bridge_.emplace(tea::bridge::HostListenerOptions{
            .wanted_port = 0,
            .service = {tea::bridge_preface::Family::ipv4, service_port_, true},
            .relay_socket = relay_.socket(),
            .call_network = network_.get()});
        client_ = connect_to(bridge_->port());
        service_ = UniqueFd{::accept4(service_listener_.get(), nullptr, nullptr, SOCK_CLOEXEC)};
        carried_ = client_.valid() && service_.valid() &&
                   wait_for([&] { return bridge_->counts().carried.load() == 1; }, 2000ms);
    }

    [[nodiscard]] bool carried() const { return carried_; }
    [[nodiscard]] int client() const { return client_.get(); }
    [[nodiscard]] int service() const { return service_.get(); }
    [[nodiscard]] std::uint16_t service_port() const { return service_port_; }
    UniqueFd &service_listener() { return service_listener_; }
    // Closes the service's end: with bytes unread, a reset.
    void close_service() { service_.reset(); }

    // Whether the listener stops within 2 s; if not, `unblock` runs, so that the test can end.
    bool stops_in_time(const std::function<void()> &unblock) {
        std::atomic<bool> stopped{false};
        std::thread stopper([&] {
            bridge_->stop();
            stopped = true;
        });
        const bool in_time = wait_for([&] { return stopped.load(); }, 2000ms);
        if (!in_time) {
            unblock();
        }
        stopper.join();
        return in_time;
    }

   private:
    std::uint16_t service_port_ = 0;
    UniqueFd service_listener_;
    UniqueFd network_;
    FakeRelay relay_;
    std::optional<tea::bridge::HostListener> bridge_;
    UniqueFd client_;
    UniqueFd service_;
    bool carried_ = false;
};

// Attack: the relay, of the target's identity, keeps a copy of the connection it hands, and once
// the host carries a client over it sets the shared file blocking again, its service never
// answering. The host listener still stops when the bridge ends (a loop held in a read of the
// connection would hold every client and the call's end). The control, a loop that splices such a
// destination and is held, is StreamRelayAttack's in host_listener_test.cpp.
TEST(HostListenerHandOverAttack, ARelayThatKeepsACopyAndSetsItBlockingHoldsNothing) {
    std::mutex kept_mutex;
    UniqueFd kept;  // the relay's copy
    CarriedOverAHandedConnection pair([&](int c, std::uint16_t port) {
        auto genuine = connect_to(port);
        {
            // Kept before it is handed: the host may carry a client over it at once.
            const std::lock_guard lock{kept_mutex};
            kept = UniqueFd{::fcntl(genuine.get(), F_DUPFD_CLOEXEC, 0)};
        }
        send_descriptors(c, {genuine.get()});
    });
    ASSERT_TRUE(pair.carried());
    {
        const std::lock_guard lock{kept_mutex};
        ASSERT_TRUE(kept.valid());
        const int flags = ::fcntl(kept.get(), F_GETFL);
        ASSERT_NE(flags & O_NONBLOCK, 0) << "the host made the handed file non-blocking";
        ASSERT_EQ(::fcntl(kept.get(), F_SETFL, flags & ~O_NONBLOCK), 0);
    }
    ASSERT_EQ(::send(pair.client(), "request", 7, MSG_NOSIGNAL), 7);
    std::string got(7, '\0');
    pollfd p{pair.service(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 2000), 1);
    ASSERT_EQ(::recv(pair.service(), got.data(), got.size(), MSG_WAITALL), 7);
    EXPECT_EQ(got, "request");
    std::this_thread::sleep_for(100ms);  // the loop's turn, in which it reads the connection
    // If held, the service's end closes, which lets a held read return.
    EXPECT_TRUE(pair.stops_in_time([&] { ::shutdown(pair.service(), SHUT_WR); }))
        << "the host listener was held by the shared connection";
}

// A connection to `port` whose send queue is full toward a peer that reads nothing (both buffers
// made small) and that lingers 30 s on its last close: that close waits for the queue to drain.
UniqueFd lingering_connection(std::uint16_t port) {
    UniqueFd fd{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    const int small = 4096;
    EXPECT_EQ(::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    const std::string chunk(4096, 'x');
    while (::send(fd.get(), chunk.data(), chunk.size(), MSG_DONTWAIT | MSG_NOSIGNAL) > 0) {
    }
    const linger for_long{1, 30};
    EXPECT_EQ(::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &for_long, sizeof for_long), 0);
    return fd;
}

// Attack: the relay hands a connection set to linger, its send queue full toward a service that
// never reads, and closes its own copy, so the host's is the last: a close of it waited for the
// linger time, the host listener's loop and its stop with it. The host closes a handed socket
// with the lingering off, on a thread of its own: the listener stops at once. Control: the same
// connection closed as the last copy by a plain close waits.
TEST(HostListenerHandOverAttack, ALingeringConnectionHoldsNoClose) {
    CarriedOverAHandedConnection pair(
        [](int c, std::uint16_t port) {
            const auto lingering = lingering_connection(port);
            send_descriptors(c, {lingering.get()});
        },
        4096);
    ASSERT_TRUE(pair.carried());
    // If held, the service's end closes with its bytes unread: a reset ends the lingering close.
    EXPECT_TRUE(pair.stops_in_time([&] { pair.close_service(); }))
        << "the host listener waited on a lingering close";

    // Control: the last copy of such a connection, closed plainly, waits.
    auto last = lingering_connection(pair.service_port());
    UniqueFd second{::accept4(pair.service_listener().get(), nullptr, nullptr, SOCK_CLOEXEC)};
    std::atomic<bool> closed{false};
    std::thread closer([&] {
        last.reset();
        closed = true;
    });
    std::this_thread::sleep_for(500ms);
    EXPECT_FALSE(closed.load()) << "the lingering close did not wait";
    second.reset();  // closed with its bytes unread: a reset, which ends the lingering close
    closer.join();
    EXPECT_TRUE(closed.load());
}

}  // namespace
