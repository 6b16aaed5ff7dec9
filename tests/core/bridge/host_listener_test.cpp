// The bridge's host listener (core/bridge) with the real tea-bridge-relay in front of a real
// loopback server, no confinement: requests carried, the port chosen, the relay's refusal of a
// non-loopback service, and the limits against a client that never reads and thousands of
// connections, each with its control.
#include "bridge/host_listener.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <tea/stream_relay.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "relay_fixtures.hpp"
#include "support/socket_io.hpp"
#include "util/fd.hpp"

namespace {

using namespace bridge_fixtures;

TEST(HostListener, CarriesARequestToTheServiceOnItsOwnPort) {
    LoopbackServer service(ServerMode::http);
    Relay relay;
    const std::uint16_t wanted = free_port();
    tea::bridge::HostListener bridge(
        {.wanted_port = wanted, .service = to(service), .relay_socket = relay.socket()});
    EXPECT_EQ(bridge.port(), wanted);
    EXPECT_TRUE(bridge.own_port());
    EXPECT_TRUE(ends_with_body(request(bridge.port()))) << request(bridge.port());
    bridge.stop();
    EXPECT_GE(bridge.counts().carried.load(), 1U);
}

TEST(HostListener, TakesAPortTheSystemPicksWhenTheServicesIsTaken) {
    LoopbackServer service(ServerMode::http);
    Relay relay;
    LoopbackServer squatter(ServerMode::never_read);
    tea::bridge::HostListener bridge(
        {.wanted_port = squatter.port(), .service = to(service), .relay_socket = relay.socket()});
    EXPECT_NE(bridge.port(), squatter.port());
    EXPECT_FALSE(bridge.own_port());
    EXPECT_TRUE(ends_with_body(request(bridge.port())));
}

// A destination whose open file another descriptor still shares (a socket handed over
// SCM_RIGHTS while its sender has not closed its copy yet): closing the loop's descriptor leaves
// the file in the epoll set, so the loop takes it out itself, or data arriving after the pair
// ended would wake the loop on a freed pair (the ASan build reports it). Control: the data does
// arrive on the shared file, so an event is raised.
TEST(StreamRelay, APairWhoseDestinationIsSharedLeavesNoEventBehind) {
    std::uint16_t port = 0;
    const tea::UniqueFd listener{tea::test::listen_loopback(AF_INET, port)};
    ASSERT_TRUE(listener.valid());
    ASSERT_EQ(::fcntl(listener.get(), F_SETFL, O_NONBLOCK), 0);  // as serve wants its listeners
    int ends[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, ends), 0);
    const tea::UniqueFd shared{ends[0]};  // the sender's copy, held past the pair's end
    const tea::UniqueFd service{ends[1]};
    const tea::UniqueFd stop{::eventfd(0, EFD_CLOEXEC)};
    const std::vector<int> listeners{listener.get()};
    tea::stream_relay::Limits limits;
    limits.idle = 100ms;  // the pair ends for want of progress
    tea::stream_relay::Counts counts;
    std::thread loop([&] {
        tea::stream_relay::serve(
            listeners, [&](int) { return ::fcntl(shared.get(), F_DUPFD_CLOEXEC, 0); }, limits,
            stop.get(), &counts);
    });
    const tea::UniqueFd client = connect_to(port);
    ASSERT_TRUE(client.valid());
    for (int i = 0; i < 200 && counts.open.load() == 0; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_EQ(counts.open.load(), 1U);
    for (int i = 0; i < 300 && counts.open.load() != 0; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_EQ(counts.open.load(), 0U) << "the idle pair was not ended";
    ASSERT_EQ(::send(service.get(), "late", 4, MSG_NOSIGNAL), 4);
    pollfd p{shared.get(), POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 1000), 1);   // the control: the shared file did become readable
    std::this_thread::sleep_for(100ms);  // time for the loop to take a stale event, if any
    const std::uint64_t one = 1;
    ASSERT_EQ(::write(stop.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
    loop.join();
}

// A loop whose one pair's destination is a TCP connection the test shares (the sharer's copy):
// once the pair is made, the sharer sets the file blocking again, a client sends a request and the
// service never answers. Whether the loop, then told to stop, stops within two seconds; if not,
// the service's end closes the connection, which lets a held splice return.
bool stops_with_its_destination_set_blocking(bool said_shared) {
    std::uint16_t port = 0;
    const tea::UniqueFd listener{tea::test::listen_loopback(AF_INET, port)};
    std::uint16_t service_port = 0;
    const tea::UniqueFd service_listener{tea::test::listen_loopback(AF_INET, service_port)};
    EXPECT_TRUE(listener.valid() && service_listener.valid());
    EXPECT_EQ(::fcntl(listener.get(), F_SETFL, O_NONBLOCK), 0);  // as serve wants its listeners
    const tea::UniqueFd sharer = connect_to(service_port);
    const tea::UniqueFd service{::accept4(service_listener.get(), nullptr, nullptr, SOCK_CLOEXEC)};
    EXPECT_TRUE(sharer.valid() && service.valid());
    const int flags = ::fcntl(sharer.get(), F_GETFL);
    EXPECT_EQ(::fcntl(sharer.get(), F_SETFL, flags | O_NONBLOCK), 0);  // as the host leaves it
    const tea::UniqueFd stop{::eventfd(0, EFD_CLOEXEC)};
    const std::vector<int> listeners{listener.get()};
    tea::stream_relay::Counts counts;
    std::atomic<bool> stopped{false};
    std::thread loop([&] {
        tea::stream_relay::serve(
            listeners,
            [&](int, tea::stream_relay::Wake &wake) {
                wake.shared = said_shared;
                return ::fcntl(sharer.get(), F_DUPFD_CLOEXEC, 0);
            },
            tea::stream_relay::Limits{}, stop.get(), &counts);
        stopped = true;
    });
    const tea::UniqueFd client = connect_to(port);
    for (int i = 0; i < 200 && counts.open.load() == 0; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(counts.open.load(), 1U);
    // The attack: the shared file back in blocking mode, through the sharer's own descriptor.
    EXPECT_EQ(::fcntl(sharer.get(), F_SETFL, flags & ~O_NONBLOCK), 0);
    EXPECT_EQ(::send(client.get(), "request", 7, MSG_NOSIGNAL), 7);
    // The pair carries the request: the loop has read the client and turned to the destination.
    std::string got(7, '\0');
    pollfd p{service.get(), POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 2000), 1);
    EXPECT_EQ(::recv(service.get(), got.data(), got.size(), MSG_WAITALL), 7);
    EXPECT_EQ(got, "request");
    std::this_thread::sleep_for(100ms);
    const std::uint64_t one = 1;
    EXPECT_EQ(::write(stop.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
    for (int i = 0; i < 200 && !stopped; ++i) std::this_thread::sleep_for(10ms);
    const bool in_time = stopped;
    if (!in_time) {
        ::shutdown(service.get(), SHUT_WR);
    }
    loop.join();
    return in_time;
}

// Attack: a relay of the target's identity hands the host a connection to its service and keeps a
// copy; once the host carries a client over it, the target sets the shared file blocking again and
// never answers. A destination said shared is read with MSG_DONTWAIT, so the loop still stops (and
// serves its other clients meanwhile).
TEST(StreamRelayAttack, ADestinationItsSharerSetsBlockingAgainDoesNotHoldTheLoop) {
    EXPECT_TRUE(stops_with_its_destination_set_blocking(true));
}

// Control: the same destination not said shared is spliced, and splice follows the file's own
// mode, so the loop is held until the service closes the connection.
TEST(StreamRelayAttack, ControlADestinationNotSaidSharedIsHeldInSplice) {
    EXPECT_FALSE(stops_with_its_destination_set_blocking(false));
}

// A pair relay on a loopback port of its own whose every destination is a new connection to
// `service_port`, said shared: its pairs copy. Stopped and joined when it goes.
class CopyingRelay {
   public:
    explicit CopyingRelay(std::uint16_t service_port)
        : listener_{tea::test::listen_loopback(AF_INET, port_)}, stop_{::eventfd(0, EFD_CLOEXEC)} {
        EXPECT_EQ(::fcntl(listener_.get(), F_SETFL, O_NONBLOCK), 0);
        listeners_.push_back(listener_.get());
        loop_ = std::thread([this, service_port] {
            tea::stream_relay::serve(
                listeners_,
                [service_port](int, tea::stream_relay::Wake &wake) {
                    wake.shared = true;
                    return connect_to(service_port, false).release();
                },
                tea::stream_relay::Limits{}, stop_.get());
        });
    }
    CopyingRelay(const CopyingRelay &) = delete;
    CopyingRelay &operator=(const CopyingRelay &) = delete;
    ~CopyingRelay() {
        const std::uint64_t one = 1;
        EXPECT_EQ(::write(stop_.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
        loop_.join();
    }
    [[nodiscard]] std::uint16_t port() const { return port_; }

   private:
    std::uint16_t port_ = 0;
    tea::UniqueFd listener_;
    tea::UniqueFd stop_;
    std::vector<int> listeners_;
    std::thread loop_;
};

// A pair that copies carries both ways and ends both ways as a spliced pair does: a request in,
// the answer out, each side's end passed on.
TEST(StreamRelay, APairWhoseDestinationIsSharedCarriesBothWaysToTheEnd) {
    LoopbackServer service(ServerMode::http);
    const CopyingRelay relay(service.port());
    for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(ends_with_body(request(relay.port()))) << i;
    }
}

// A pair that copies carries 128 times what its buffer holds, the client writing as fast as it
// can, so that the buffer fills and sends go out in part: every byte arrives.
TEST(StreamRelay, APairWhoseDestinationIsSharedCarriesMoreThanItsBufferWhole) {
    LoopbackServer sink(ServerMode::sink);
    const CopyingRelay relay(sink.port());
    const tea::UniqueFd client = connect_to(relay.port());
    ASSERT_TRUE(client.valid());
    constexpr std::size_t kBytes = std::size_t{8} << 20;  // 128 times the buffer
    const std::string chunk(std::size_t{1} << 16, 'x');
    std::size_t sent = 0;
    while (sent < kBytes) {
        const auto n = ::send(client.get(), chunk.data(), chunk.size(), MSG_NOSIGNAL);
        ASSERT_GT(n, 0) << std::strerror(errno);
        sent += static_cast<std::size_t>(n);
    }
    EXPECT_TRUE(wait_for([&] { return sink.received() >= sent; }, 10000ms))
        << sink.received() << " of " << sent;
    EXPECT_EQ(sink.received(), sent);
}

// A Unix stream socket pair, both ends non-blocking.
std::pair<tea::UniqueFd, tea::UniqueFd> unix_pair() {
    std::array<int, 2> ends{};
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, ends.data()), 0);
    return {tea::UniqueFd{ends[0]}, tea::UniqueFd{ends[1]}};
}

// Room for `bytes` queued on a socket that sends (SO_SNDBUFFORCE, which needs CAP_NET_ADMIN).
bool make_room(int fd, std::size_t bytes) {
    const int size = static_cast<int>(bytes);
    return ::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size) == 0;
}

// Bytes waiting to be read on fd.
std::size_t queued(int fd) {
    int n = 0;
    return ::ioctl(fd, FIONREAD, &n) == 0 ? static_cast<std::size_t>(n) : 0;
}

// One pair whose bytes keep coming (64 MiB queued before the loop starts, and a destination with
// room for all of it) does not keep the loop from a second connection. The second's destination
// is not ready for its first two tries, one per turn of the loop: at each try the first pair has
// moved only part of its bytes (a turn gives it a bounded share, not all it can move), the
// second's reply then reaches its client, and the first still arrives whole (pumped again on
// later turns, with no event to announce it). Before, the loop moved the first pair's 64 MiB at
// once, and an endless one would have held it for ever.
TEST(StreamRelayAttack, AnEndlessStreamDoesNotKeepTheLoopFromOtherConnections) {
    constexpr std::size_t kBytes = std::size_t{64} << 20;
    const tea::UniqueFd listener{::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string name = "tea-endless-" + std::to_string(::getpid());
    std::memcpy(address.sun_path + 1, name.data(), name.size());  // abstract: no file left
    const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr *>(&address), length), 0);
    ASSERT_EQ(::listen(listener.get(), 8), 0);
    const auto client = [&] {
        tea::UniqueFd fd{::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
        EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr *>(&address), length), 0);
        return fd;
    };
    // The endless stream: its client's bytes queued, its destination with room for them all.
    const auto endless = client();
    if (!make_room(endless.get(), kBytes * 2)) {
        GTEST_SKIP() << "queuing 64 MiB on a socket needs CAP_NET_ADMIN (SO_SNDBUFFORCE): "
                     << std::strerror(errno);
    }
    const std::string chunk(std::size_t{1} << 20, 'e');
    for (std::size_t sent = 0; sent < kBytes; sent += chunk.size()) {
        ASSERT_EQ(::send(endless.get(), chunk.data(), chunk.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(chunk.size()));
    }
    auto endless_pair = unix_pair();
    tea::UniqueFd to_endless = std::move(endless_pair.first);
    const tea::UniqueFd endless_sink = std::move(endless_pair.second);
    ASSERT_TRUE(make_room(to_endless.get(), kBytes * 2)) << std::strerror(errno);
    // The other connection: its reply already waits at its destination.
    const auto other = client();
    auto other_pair = unix_pair();
    tea::UniqueFd to_other = std::move(other_pair.first);
    const tea::UniqueFd other_service = std::move(other_pair.second);
    const std::string reply = "the other connection's reply";
    ASSERT_EQ(::send(other_service.get(), reply.data(), reply.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(reply.size()));

    std::vector<std::size_t> moved_at_each_try;
    bool paired = false;
    const tea::UniqueFd stop{::eventfd(0, EFD_CLOEXEC)};
    const std::vector<int> listeners{listener.get()};
    std::thread loop([&] {
        tea::stream_relay::serve(
            listeners,
            [&](int) {
                if (!paired) {
                    paired = true;
                    return to_endless.release();
                }
                moved_at_each_try.push_back(queued(endless_sink.get()));
                if (moved_at_each_try.size() < 3) {
                    errno = EAGAIN;  // not ready yet: tried again on the next turn
                    return -1;
                }
                return to_other.release();
            },
            tea::stream_relay::Limits{}, stop.get());
    });
    pollfd ready{other.get(), POLLIN, 0};
    EXPECT_EQ(::poll(&ready, 1, 20'000), 1);
    std::string got(reply.size(), '\0');
    EXPECT_EQ(::recv(other.get(), got.data(), got.size(), MSG_DONTWAIT),
              static_cast<ssize_t>(reply.size()));
    EXPECT_EQ(got, reply);
    EXPECT_TRUE(wait_for([&] { return queued(endless_sink.get()) >= kBytes; }, 20'000ms))
        << queued(endless_sink.get()) << " of " << kBytes;
    const std::uint64_t one = 1;
    EXPECT_EQ(::write(stop.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
    loop.join();
    // Read once the loop, which wrote them, has ended.
    ASSERT_EQ(moved_at_each_try.size(), 3U);
    for (const auto moved : moved_at_each_try) {
        EXPECT_LT(moved, kBytes / 4);
    }
}

TEST(HostListener, AConnectionEndsWithTheBridge) {
    LoopbackServer service(ServerMode::never_read);
    Relay relay;
    tea::bridge::HostListener bridge(
        {.wanted_port = 0, .service = to(service), .relay_socket = relay.socket()});
    const tea::UniqueFd client = connect_to(bridge.port());
    std::this_thread::sleep_for(100ms);
    bridge.stop();
    char c = 0;
    pollfd p{client.get(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 2000), 1);
    EXPECT_LE(::recv(client.get(), &c, 1, 0), 0);     // closed by the bridge's end
    EXPECT_FALSE(connect_to(bridge.port()).valid());  // the listener went with it
}

TEST(BridgeRelay, ConnectsWhereThePrefaceSaysOnLoopbackOnly) {
    LoopbackServer service(ServerMode::http);
    Relay relay;
    // Control: a preface naming the service's port is carried to it.
    const auto good = connect_relay(relay, preface_of(service) + "GET / HTTP/1.0\r\n\r\n");
    std::string reply;
    char buffer[256];
    for (ssize_t n; (n = ::recv(good.get(), buffer, sizeof buffer, 0)) > 0;) {
        reply.append(buffer, static_cast<std::size_t>(n));
    }
    EXPECT_TRUE(ends_with_body(reply)) << reply;
    // A family other than 4 or 6, or port 0, names no loopback address: closed at once.
    for (const std::string &bad :
         {std::string{"\x09\x1f\x90", 3}, std::string{"\x04\x00\x00", 3}, std::string{"GET", 3}}) {
        const auto fd = connect_relay(relay, bad);
        EXPECT_TRUE(closed_within(fd.get(), 1000ms));
    }
}

// `tea-bridge-relay --socket <dir>/bridge.sock -- sh -c script` as a plan starts it beside the
// service: its exit status and how long it took.
struct Beside {
    int status = -1;
    std::chrono::milliseconds took{0};
};
Beside run_beside(const fs::path &socket, const std::string &script) {
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::execl(TEA_BRIDGE_RELAY, TEA_BRIDGE_RELAY, "--socket", socket.c_str(), "--", "/bin/sh",
                "-c", script.c_str(), nullptr);
        ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)};
}

TEST(BridgeRelay, BesideAProgramItKeepsTheProgramsStatusAndItsWaitAndEndsWithIt) {
    LoopbackServer service(ServerMode::http);
    char pattern[] = "/tmp/tea-bridge-beside-XXXXXX";
    const fs::path dir = ::mkdtemp(pattern);
    const fs::path socket = dir / "bridge.sock";
    // The relay carries while the program runs: the program itself asks through the socket.
    const std::string script =
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('" +
        socket.string() + "'); s.sendall(bytes([4, " + std::to_string(service.port() >> 8) + ", " +
        std::to_string(service.port() & 0xff) +
        "]) + b'GET / HTTP/1.0\\r\\n\\r\\n'); print(s.makefile('rb').read().decode())\" | grep -q "
        "'hello from inside' && exit 7";
    const auto carried = run_beside(socket, script);
    EXPECT_EQ(carried.status, 7);  // the program's own status, and the reply came through
    // A shell's wait for its children is not held by the relay (not the program's child), and
    // the relay is gone with the program: the socket refuses afterwards.
    fs::remove(socket);
    const auto waited = run_beside(socket, "sleep 0.1 & wait; exit 3");
    EXPECT_EQ(waited.status, 3);
    EXPECT_LT(waited.took, 5000ms);
    EXPECT_TRUE(wait_for(
        [&] {
            const int fd = tea::stream_relay::connect_unix(socket.string());
            if (fd >= 0) {
                ::close(fd);
                return false;
            }
            return errno == ECONNREFUSED;
        },
        5000ms));
    // A program that cannot be run: 127, named.
    fs::remove(socket);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::execl(TEA_BRIDGE_RELAY, TEA_BRIDGE_RELAY, "--socket", socket.c_str(), "--",
                "/nonexistent/program", nullptr);
        ::_exit(1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_EQ(WEXITSTATUS(status), 127);
    fs::remove_all(dir);
}

TEST(BridgeAttack, APeerThatNeverSendsAPrefaceDoesNotHoldTheRelay) {
    LoopbackServer service(ServerMode::http);
    Relay relay;
    tea::bridge::HostListener bridge(
        {.wanted_port = 0, .service = to(service), .relay_socket = relay.socket()});
    // A target connects to the relay's socket and stays silent: the relay closes it after its
    // wait, and the host's request behind it is answered.
    const auto silent = connect_relay(relay, "");
    EXPECT_TRUE(ends_with_body(request(bridge.port(), 10'000ms)));
    EXPECT_TRUE(closed_within(silent.get(), 5000ms));
}

// Sends as much of `total` as the path takes within `patience` of no progress; the bytes sent.
std::uint64_t send_until_stalled(int fd, std::uint64_t total, std::chrono::milliseconds patience) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    std::vector<char> chunk(std::size_t{1} << 20, 'x');
    std::uint64_t sent = 0;
    while (sent < total) {
        pollfd p{fd, POLLOUT, 0};
        if (::poll(&p, 1, static_cast<int>(patience.count())) <= 0) {
            break;
        }
        const auto n = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
        if (n <= 0 && errno != EAGAIN) {
            break;
        }
        sent += n > 0 ? static_cast<std::uint64_t>(n) : 0;
    }
    return sent;
}

constexpr std::uint64_t kUpload = std::uint64_t{256} << 20;

TEST(BridgeAttack, AServiceThatNeverReadsHoldsTheUploadBoundedInTheRelay) {
    LoopbackServer service(ServerMode::never_read);
    Relay relay;
    tea::bridge::HostListener bridge(
        {.wanted_port = 0, .service = to(service), .relay_socket = relay.socket()});
    const long before = relay.resident_kib();
    const tea::UniqueFd client = connect_to(bridge.port());
    const std::uint64_t sent = send_until_stalled(client.get(), kUpload, 1000ms);
    // Kernel socket buffers on three hops plus two 64 KiB buffers, never the upload.
    EXPECT_LT(sent, std::uint64_t{48} << 20);
    EXPECT_LT(relay.resident_kib() - before, 1024);
}

TEST(BridgeAttack, ControlAServiceThatReadsTakesTheWholeUpload) {
    LoopbackServer service(ServerMode::sink);
    Relay relay;
    tea::bridge::HostListener bridge(
        {.wanted_port = 0, .service = to(service), .relay_socket = relay.socket()});
    const tea::UniqueFd client = connect_to(bridge.port());
    EXPECT_EQ(send_until_stalled(client.get(), kUpload, 5000ms), kUpload);
}

// Two connections and a pipe (two ends) per direction.
constexpr std::size_t kDescriptorsPerPair = 6;
// The relay's socket, its standard streams, its epoll set and a connection waiting for room.
constexpr std::size_t kRelayOwnDescriptors = 8;

TEST(BridgeAttack, ThousandsOfConnectionsCostNoMoreThanTheLimit) {
    LoopbackServer service(ServerMode::http);
    Relay relay;
    tea::bridge::HostListener bridge(
        {.wanted_port = 0, .service = to(service), .relay_socket = relay.socket()});
    std::vector<tea::UniqueFd> flood;
    for (int i = 0; i < 3000; ++i) {
        flood.push_back(connect_to(bridge.port(), false));
    }
    // Both ends full: the host listener carries its 256 pairs and the relay the same 256.
    ASSERT_TRUE(wait_for([&] { return bridge.counts().open.load() == 256; }, 20'000ms));
    ASSERT_TRUE(
        wait_for([&] { return relay.open_descriptors() >= kDescriptorsPerPair * 256; }, 20'000ms));
    for (int sample = 0; sample < 10; ++sample) {
        EXPECT_EQ(bridge.counts().open.load(), 256U);
        EXPECT_LE(relay.open_descriptors(), kDescriptorsPerPair * 256 + kRelayOwnDescriptors);
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_GE(bridge.counts().waited_at_limit.load(), 1U);
    flood.clear();
    // Every client that closed is still accepted and carried in its turn, none is accepted and
    // closed for want of room, and a new client is answered behind them.
    EXPECT_TRUE(ends_with_body(request(bridge.port(), 20'000ms)));
    bridge.stop();
    EXPECT_EQ(bridge.counts().unreachable.load(), 0U);
    EXPECT_GT(bridge.counts().carried.load(), 3000U);
}

// The relay's slots and its backlog taken (here by a target connecting to its socket; in the flood
// above, by pairs the host had already closed): a host client waits for a slot instead of being
// accepted and closed at once.
TEST(BridgeAttack, AClientWaitsWhileTheRelayIsFullInsteadOfBeingAcceptedAndClosed) {
    LoopbackServer service(ServerMode::http);
    Relay relay;
    tea::bridge::HostListener bridge(
        {.wanted_port = 0, .service = to(service), .relay_socket = relay.socket()});
    // Connects until the relay's 256 pairs and its backlog are full: refused (EAGAIN) for 300 ms
    // on end, while the relay accepts what it can.
    std::vector<tea::UniqueFd> held;
    for (int refused_in_a_row = 0; refused_in_a_row < 15 && held.size() < 4096;) {
        auto fd = connect_relay(relay, preface_of(service));
        if (fd) {
            held.push_back(std::move(fd));
            refused_in_a_row = 0;
            continue;
        }
        ASSERT_EQ(errno, EAGAIN);
        ++refused_in_a_row;
        std::this_thread::sleep_for(20ms);
    }
    ASSERT_GT(held.size(), 256U);
    std::string reply;
    std::thread client([&] { reply = request(bridge.port(), 10'000ms); });
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(bridge.counts().unreachable.load(), 0U);  // not closed while it waits
    held.clear();
    client.join();
    EXPECT_TRUE(ends_with_body(reply)) << reply;
}

TEST(BridgeAttack, ThousandsOfConnectionsToTheRelayItselfCostNoMoreThanItsLimit) {
    // A target can connect to the relay's socket in its call directory without the host
    // listener's limit in front.
    LoopbackServer service(ServerMode::http);
    Relay relay;
    std::vector<int> flood;
    for (int i = 0; i < 3000; ++i) {
        auto fd = connect_relay(relay, preface_of(service));
        if (fd) {
            flood.push_back(fd.release());
        }
        if (i % 100 == 99) {
            std::this_thread::sleep_for(10ms);  // the relay accepts as the flood goes on
        }
    }
    EXPECT_GT(flood.size(), 256U);
    ASSERT_TRUE(
        wait_for([&] { return relay.open_descriptors() >= kDescriptorsPerPair * 256; }, 20'000ms));
    EXPECT_LE(relay.open_descriptors(), kDescriptorsPerPair * 256 + kRelayOwnDescriptors);
    for (const int fd : flood) {
        ::close(fd);
    }
}

// Every slot held by a peer that sends nothing: the idle timeout frees them for a new client.
std::string request_past_idle_peers(int idle_ms) {
    LoopbackServer service(ServerMode::http);
    Relay relay(idle_ms);
    tea::bridge::HostListener bridge({.wanted_port = 0,
                                      .service = to(service),
                                      .relay_socket = relay.socket(),
                                      .limits = {256, std::chrono::milliseconds{idle_ms}}});
    std::vector<tea::UniqueFd> idle;
    for (int i = 0; i < 256; ++i) {
        idle.push_back(connect_to(bridge.port()));
    }
    std::this_thread::sleep_for(200ms);
    return request(bridge.port(), 3000ms);
}

TEST(BridgeAttack, IdlePeersLoseTheirSlots) {
    EXPECT_TRUE(ends_with_body(request_past_idle_peers(300)));
}

TEST(BridgeAttack, ControlWithoutTheIdleTimeoutIdlePeersHoldEverySlot) {
    EXPECT_EQ(request_past_idle_peers(0), "");
}

}  // namespace
