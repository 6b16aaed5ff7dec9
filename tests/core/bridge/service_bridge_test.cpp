// The bridge into a started service as an HTTP call drives it (core/bridge/service_bridge), with
// the real tea-bridge-relay unconfined in front of a real python3 http.server, as under the opt-out
// backend: the port file waited for and read, the listening address checked, a request carried and
// curl through the host port; and the refusals, each against its control. The same under the
// bubblewrap backend is in tests/plugins/backend-bubblewrap.
#include "bridge/service_bridge.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "bridge/port_file.hpp"
#include "bridge/relay_socket.hpp"
#include "support/process.hpp"
#include "util/fd.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// A child process started with `argv`, killed (its whole group) at the end of the test.
class Child {
   public:
    explicit Child(std::vector<std::string> argv) {
        pid_ = ::fork();
        if (pid_ == 0) {
            ::setpgid(0, 0);
            std::vector<char *> args;
            for (auto &a : argv) {
                args.push_back(a.data());
            }
            args.push_back(nullptr);
            ::execvp(args[0], args.data());
            ::_exit(127);
        }
    }
    Child(const Child &) = delete;
    Child &operator=(const Child &) = delete;
    ~Child() {
        ::kill(-pid_, SIGKILL);
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    [[nodiscard]] pid_t pid() const { return pid_; }

   private:
    pid_t pid_ = -1;
};

// python3's http.server on `address` at a port the system picks, written to the port file as
// `written` makes it (the port's digits by default).
std::vector<std::string> http_service(const fs::path &dir, const std::string &address,
                                      const std::string &written = "str(s.server_port)") {
    const std::string script =
        "import http.server,os,socketserver\n"
        "class S(http.server.HTTPServer):\n"
        "    address_family = __import__('socket').AF_INET6 if ':' in '" +
        address +
        "' else __import__('socket').AF_INET\n"
        "s = S(('" +
        address +
        "', 0), http.server.SimpleHTTPRequestHandler)\n"
        "open('" +
        (dir / "port").string() + "', 'w').write(" + written +
        ")\n"
        "s.serve_forever()\n";
    return {"python3", "-c", script};
}

class ServiceBridgeTest : public ::testing::Test {
   protected:
    void SetUp() override {
        char pattern[] = "/tmp/tea-service-bridge-test-XXXXXX";
        dir_ = ::mkdtemp(pattern);
        tea::bridge::make_port_file(dir_);
        relay_.emplace(std::vector<std::string>{TEA_BRIDGE_RELAY, "--socket",
                                                (dir_ / tea::bridge::kRelaySocketName).string()});
    }
    void TearDown() override {
        relay_.reset();
        fs::remove_all(dir_);
    }
    tea::bridge::ServiceBridgeOptions options(pid_t pid) {
        return {
            .dir = dir_, .pid = pid, .own_network = false, .call_ended = -1, .patience = 10'000ms};
    }
    fs::path dir_;
    std::optional<Child> relay_;
};

// curl's HTTP status for GET / on 127.0.0.1:port ("000": no answer).
std::string curl(std::uint16_t port) {
    return tea::test::run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                           "10", "http://127.0.0.1:" + std::to_string(port) + "/"},
                          tea::test::environment_with({}))
        .out;
}

TEST_F(ServiceBridgeTest, AServiceOnLoopbackIsReachedByCurlThroughTheHostPort) {
    Child service(http_service(dir_, "127.0.0.1"));
    tea::bridge::ServiceBridge bridge(options(service.pid()));
    ASSERT_TRUE(bridge.start()) << *bridge.record().refusal;
    EXPECT_EQ(curl(bridge.host_port()), "200");
    bridge.stop();
    const auto record = bridge.record();
    // Unconfined, the service holds its own port on the host's network: the bridge took another.
    EXPECT_FALSE(record.own_port);
    EXPECT_NE(record.reported_port, bridge.host_port());
    EXPECT_EQ(record.bridge_port, bridge.host_port());
    EXPECT_GE(record.connections, 1U);
    EXPECT_FALSE(record.refusal);
    const auto json = tea::bridge::to_json(record);
    EXPECT_EQ(json["bridgeAddress"], "127.0.0.1");
    EXPECT_TRUE(json["refusal"].is_null());
    EXPECT_FALSE(record.ended_at.empty());
}

TEST_F(ServiceBridgeTest, AServiceOnIpv6LoopbackIsReached) {
    Child service(http_service(dir_, "::1"));
    tea::bridge::ServiceBridge bridge(options(service.pid()));
    ASSERT_TRUE(bridge.start()) << *bridge.record().refusal;
    EXPECT_EQ(curl(bridge.host_port()), "200");
}

TEST_F(ServiceBridgeTest, AServiceOnEveryAddressIsRefusedAndNamed) {
    Child service(http_service(dir_, "0.0.0.0"));
    tea::bridge::ServiceBridge bridge(options(service.pid()));
    EXPECT_FALSE(bridge.start());
    ASSERT_TRUE(bridge.record().refusal);
    EXPECT_NE(bridge.record().refusal->find("listens on 0.0.0.0"), std::string::npos)
        << *bridge.record().refusal;
    EXPECT_EQ(bridge.host_port(), 0);
}

TEST_F(ServiceBridgeTest, GarbageOrAHugeNumberInThePortFileIsRefused) {
    for (const std::string written : {"'80a'", "'99999'"}) {
        fs::remove(dir_ / "port");
        tea::bridge::make_port_file(dir_);
        Child service(http_service(dir_, "127.0.0.1", written));
        tea::bridge::ServiceBridge bridge(options(service.pid()));
        EXPECT_FALSE(bridge.start());
        ASSERT_TRUE(bridge.record().refusal);
        EXPECT_NE(bridge.record().refusal->find("port file"), std::string::npos);
    }
}

TEST_F(ServiceBridgeTest, AServiceThatNeverWritesItsPortEndsTheWaitWithTheCall) {
    int ended[2];
    ASSERT_EQ(::pipe2(ended, O_CLOEXEC), 0);
    Child service({"sleep", "30"});
    auto o = options(service.pid());
    o.call_ended = ended[0];
    std::thread end_call([&] {
        std::this_thread::sleep_for(200ms);
        ::close(ended[1]);
    });
    tea::bridge::ServiceBridge bridge(o);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(bridge.start());
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_NE(bridge.record().refusal->find("ended before"), std::string::npos);
    end_call.join();
    ::close(ended[0]);
    // Without the call's end, the patience bounds the wait and the refusal says so.
    o.call_ended = -1;
    o.patience = 300ms;
    tea::bridge::ServiceBridge patient(o);
    EXPECT_FALSE(patient.start());
    EXPECT_NE(patient.record().refusal->find("wrote no port"), std::string::npos);
}

// A Unix socket of "the host" the target must never reach through the bridge.
class HostSocket {
   public:
    explicit HostSocket(const fs::path &path) : path_(path) {
        fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
        EXPECT_EQ(::bind(fd_.get(), reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        EXPECT_EQ(::listen(fd_.get(), 8), 0);
    }
    // Whether a connection arrived within `limit` (accepted and closed, so the next is seen).
    bool connected_within(std::chrono::milliseconds limit) {
        pollfd p{fd_.get(), POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(limit.count())) != 1) {
            return false;
        }
        const tea::UniqueFd accepted{::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC)};
        return accepted.valid();
    }

   private:
    fs::path path_;
    tea::UniqueFd fd_;
};

TEST_F(ServiceBridgeTest, APlantedLinkInPlaceOfTheRelaysSocketIsNotFollowed) {
    HostSocket host(dir_.parent_path() / (dir_.filename().string() + "-host.sock"));
    // Control: connecting by the host socket's own path reaches it.
    const std::string host_path = dir_.parent_path() / (dir_.filename().string() + "-host.sock");
    const int direct = tea::bridge::connect_relay_socket(host_path);
    EXPECT_GE(direct, 0);
    EXPECT_TRUE(host.connected_within(1000ms));
    ::close(direct);
    // The target swaps the relay's socket for a link to the host socket.
    fs::path planted = dir_ / "planted";
    fs::create_symlink(host_path, planted);
    // Control: a connect by path, as the host listener made it before, follows the link.
    const tea::UniqueFd by_path{tea::stream_relay::connect_unix(planted.string())};
    EXPECT_TRUE(by_path.valid());
    EXPECT_TRUE(host.connected_within(1000ms));
    errno = 0;
    EXPECT_EQ(tea::bridge::connect_relay_socket(planted.string()), -1);
    EXPECT_EQ(errno, ELOOP);
    // Through the host listener: the client's connection is closed, the host socket never hears.
    tea::bridge::HostListener bridge({.wanted_port = 0,
                                      .service = {tea::bridge_preface::Family::ipv4, 80},
                                      .relay_socket = planted});
    EXPECT_EQ(curl(bridge.port()), "000");
    EXPECT_FALSE(host.connected_within(500ms));
    bridge.stop();
    EXPECT_GE(bridge.counts().unreachable.load(), 1U);
    fs::remove(host_path);
}

}  // namespace
