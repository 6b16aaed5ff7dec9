// The egress CONNECT proxy against real processes: a TCP echo server and a TLS server on this
// machine's loopback, reached through the proxy's Unix socket by raw sockets, curl and Python.
// Every refusal has a positive control: the same client reaching an allowed target.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "policy.hpp"
#include "proxy.hpp"
#include "support/socket_io.hpp"

extern char **environ;

namespace tea::egress {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::send_all;

// ---------------------------------------------------------------------------------------------
// Fixtures: temp directories, sockets, servers and a TCP-to-Unix forwarder for curl and Python.

class TempDir {
   public:
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "tea-proxy-test-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    const fs::path &path() const { return path_; }

   private:
    fs::path path_;
};

class Fd {
   public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(Fd &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd &operator=(Fd &&other) noexcept {
        if (this != &other) {
            if (fd_ >= 0) ::close(fd_);
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    int get() const { return fd_; }

   private:
    int fd_;
};

void set_timeouts(int fd, std::chrono::milliseconds timeout) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Reads until end of stream, an error or the receive timeout.
std::string read_all(int fd) {
    std::string out;
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return out;
        out.append(buffer, static_cast<std::size_t>(n));
    }
}

// Reads a response head (through CRLFCRLF) and nothing after it.
std::string read_head(int fd) {
    std::string out;
    char c = 0;
    while (out.size() < 65536 && out.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(fd, &c, 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out += c;
    }
    return out;
}

std::string read_exactly(int fd, std::size_t size) {
    std::string out(size, '\0');
    std::size_t have = 0;
    while (have < size) {
        const ssize_t n = ::recv(fd, out.data() + have, size - have, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += static_cast<std::size_t>(n);
    }
    out.resize(have);
    return out;
}

Fd connect_unix(const fs::path &path) {
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    if (::connect(fd.get(), reinterpret_cast<sockaddr *>(&address), sizeof address) != 0) {
        ADD_FAILURE() << "connect " << path << ": " << std::strerror(errno);
        return Fd();
    }
    set_timeouts(fd.get(), 5s);
    return fd;
}

// Sends a request head to the proxy and returns everything it answers until it closes.
std::string ask(const fs::path &socket, std::string_view request) {
    Fd fd = connect_unix(socket);
    if (fd.get() < 0) return {};
    send_all(fd.get(), request);
    return read_all(fd.get());
}

std::string status_line(const std::string &response) {
    return response.substr(0, response.find("\r\n"));
}

Fd listen_loopback(int family, std::uint16_t &port) {
    return Fd(test::listen_loopback(family, port));
}

// A port on 127.0.0.1 where nothing listens.
std::uint16_t closed_port() {
    std::uint16_t port = 0;
    Fd fd = listen_loopback(AF_INET, port);
    return port;
}

// Echoes every byte back, then half-closes when its client does.
class EchoServer {
   public:
    explicit EchoServer(int family = AF_INET) {
        listener_ = listen_loopback(family, port_);
        if (listener_.get() >= 0) accepter_ = std::thread([this] { accept_loop(); });
    }
    ~EchoServer() {
        stopping_ = true;
        ::shutdown(listener_.get(), SHUT_RDWR);
        if (accepter_.joinable()) accepter_.join();
        const std::lock_guard lock(mutex_);
        for (const Fd &fd : connections_) ::shutdown(fd.get(), SHUT_RDWR);
        for (std::thread &worker : workers_) worker.join();
    }
    EchoServer(const EchoServer &) = delete;
    EchoServer &operator=(const EchoServer &) = delete;

    bool ok() const { return listener_.get() >= 0; }
    std::uint16_t port() const { return port_; }
    int accepted() const { return accepted_.load(); }

   private:
    void accept_loop() {
        for (;;) {
            const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR && !stopping_) continue;
                return;
            }
            ++accepted_;
            const std::lock_guard lock(mutex_);
            connections_.emplace_back(fd);
            workers_.emplace_back([fd] { echo(fd); });
        }
    }

    static void echo(int fd) {
        std::vector<char> buffer(1 << 16);
        for (;;) {
            const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            if (!send_all(fd, std::string_view(buffer.data(), static_cast<std::size_t>(n)))) {
                break;
            }
        }
        ::shutdown(fd, SHUT_WR);
    }

    Fd listener_;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<int> accepted_{0};
    std::thread accepter_;
    std::mutex mutex_;
    std::vector<Fd> connections_;
    std::vector<std::thread> workers_;
};

// Listens on 127.0.0.1 and forwards each connection to a Unix socket, as the in-namespace shim
// does; curl and Python cannot use a proxy on a Unix socket themselves.
class Forwarder {
   public:
    explicit Forwarder(fs::path target) : target_(std::move(target)) {
        listener_ = listen_loopback(AF_INET, port_);
        accepter_ = std::thread([this] { accept_loop(); });
    }
    ~Forwarder() {
        stopping_ = true;
        ::shutdown(listener_.get(), SHUT_RDWR);
        if (accepter_.joinable()) accepter_.join();
        const std::lock_guard lock(mutex_);
        for (const Fd &fd : fds_) ::shutdown(fd.get(), SHUT_RDWR);
        for (std::thread &worker : workers_) worker.join();
    }
    Forwarder(const Forwarder &) = delete;
    Forwarder &operator=(const Forwarder &) = delete;

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

   private:
    void accept_loop() {
        for (;;) {
            const int tcp = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
            if (tcp < 0) {
                if (errno == EINTR && !stopping_) continue;
                return;
            }
            const int unix_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_un address{};
            address.sun_family = AF_UNIX;
            std::strncpy(address.sun_path, target_.c_str(), sizeof address.sun_path - 1);
            const int rc =
                ::connect(unix_fd, reinterpret_cast<sockaddr *>(&address), sizeof address);
            const std::lock_guard lock(mutex_);
            fds_.emplace_back(tcp);
            fds_.emplace_back(unix_fd);
            if (rc != 0) {
                ::shutdown(tcp, SHUT_RDWR);
                continue;
            }
            workers_.emplace_back([tcp, unix_fd] { copy(tcp, unix_fd); });
            workers_.emplace_back([tcp, unix_fd] { copy(unix_fd, tcp); });
        }
    }

    static void copy(int from, int to) {
        std::vector<char> buffer(1 << 16);
        for (;;) {
            const ssize_t n = ::recv(from, buffer.data(), buffer.size(), 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            if (!send_all(to, std::string_view(buffer.data(), static_cast<std::size_t>(n)))) {
                break;
            }
        }
        ::shutdown(to, SHUT_WR);
    }

    fs::path target_;
    Fd listener_;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::thread accepter_;
    std::mutex mutex_;
    std::vector<Fd> fds_;
    std::vector<std::thread> workers_;
};

struct RunResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

std::string slurp(const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// Runs a program with a minimal environment (no proxy variables leak in from the host) and its
// output in files under `dir`.
pid_t spawn(const std::vector<std::string> &args, const fs::path &out, const fs::path &err) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::vector<char *> argv;
    for (const std::string &arg : args) argv.push_back(const_cast<char *>(arg.c_str()));
    argv.push_back(nullptr);
    std::string path = "PATH=/usr/local/bin:/usr/bin:/bin";
    std::string lang = "LANG=C.UTF-8";
    std::vector<char *> envp = {path.data(), lang.data(), nullptr};
    pid_t pid = -1;
    if (posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&actions);
    return pid;
}

RunResult run(const std::vector<std::string> &args, const fs::path &dir,
              std::chrono::milliseconds timeout = 20s) {
    static std::atomic<int> counter{0};
    const int n = counter++;
    const fs::path out = dir / ("run-" + std::to_string(n) + ".out");
    const fs::path err = dir / ("run-" + std::to_string(n) + ".err");
    RunResult result;
    const pid_t pid = spawn(args, out, err);
    if (pid < 0) return result;
    const auto deadline = Clock::now() + timeout;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (Clock::now() > deadline) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            break;
        }
        std::this_thread::sleep_for(5ms);
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = slurp(out);
    result.err = slurp(err);
    return result;
}

// A TLS server (Python's ssl module, a certificate made by openssl for this run) answering
// every GET with a fixed body.
class TlsServer {
   public:
    TlsServer() {
        const fs::path &d = dir_.path();
        cert_ = d / "cert.pem";
        const RunResult made = run(
            {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", (d / "key.pem").string(), "-out", cert_.string(), "-days", "1",
             "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"},
            d);
        if (made.exit_code != 0) {
            error_ = "openssl req failed: " + made.err;
            return;
        }
        const fs::path out = d / "server.out";
        pid_ = spawn({"python3", TEA_EGRESS_GET_SERVER, "tls", "-", cert_.string(),
                      (d / "key.pem").string()},
                     out, d / "server.err");
        const auto deadline = Clock::now() + 10s;
        while (Clock::now() < deadline) {
            const std::string text = slurp(out);
            if (text.find('\n') != std::string::npos) {
                port_ = static_cast<std::uint16_t>(std::stoi(text));
                return;
            }
            std::this_thread::sleep_for(20ms);
        }
        error_ = "the TLS server did not start: " + slurp(d / "server.err");
    }
    ~TlsServer() {
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    TlsServer(const TlsServer &) = delete;
    TlsServer &operator=(const TlsServer &) = delete;

    const std::string &error() const { return error_; }
    std::uint16_t port() const { return port_; }
    const fs::path &cert() const { return cert_; }

   private:
    TempDir dir_;
    fs::path cert_;
    pid_t pid_ = -1;
    std::uint16_t port_ = 0;
    std::string error_;
};

// A resolver for names that must never reach DNS from this machine; counts its calls.
struct FakeResolver {
    std::map<std::string, std::vector<std::string>> names;
    std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);

    Resolver get() const {
        return [names = names, calls = calls](const std::string &host, std::uint16_t port) {
            ++*calls;
            Resolution r;
            const auto it = names.find(host);
            if (it == names.end()) {
                r.status = Resolution::Status::no_such_name;
                r.error = "Name or service not known";
                return r;
            }
            r.status = Resolution::Status::ok;
            for (const std::string &text : it->second) {
                // A resolver's port is ignored by the policy; give a wrong one on purpose.
                r.addresses.push_back(
                    *SocketAddress::parse(text, static_cast<std::uint16_t>(port == 1 ? 2 : 1)));
            }
            return r;
        };
    }
};

// A started proxy in a private directory.
class RunningProxy {
   public:
    RunningProxy(Policy policy, ProxyOptions options = fast_options())
        : socket_(dir_.path() / "egress.sock"),
          proxy_(std::make_unique<ConnectProxy>(std::move(policy), options)) {
        proxy_->start(socket_);
    }
    static ProxyOptions fast_options() {
        ProxyOptions options;
        options.head_timeout = 2s;
        options.connect_timeout = 2s;
        options.resolve_timeout = 2s;
        return options;
    }
    const fs::path &socket() const { return socket_; }
    const fs::path &dir() const { return dir_.path(); }
    ConnectProxy &proxy() { return *proxy_; }
    ProxyRecords records() const { return proxy_->records(); }

   private:
    TempDir dir_;
    fs::path socket_;
    std::unique_ptr<ConnectProxy> proxy_;
};

std::string connect_head(const std::string &authority) {
    return "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
}

// Opens a tunnel to an echo server and checks one round trip through it.
Fd open_echo_tunnel(const fs::path &socket, const std::string &authority) {
    Fd fd = connect_unix(socket);
    if (fd.get() < 0) return fd;
    send_all(fd.get(), connect_head(authority));
    const std::string head = read_head(fd.get());
    if (status_line(head) != "HTTP/1.1 200 Connection established") {
        ADD_FAILURE() << "no tunnel to " << authority << ": " << head << read_all(fd.get());
        return Fd();
    }
    send_all(fd.get(), "ping");
    EXPECT_EQ(read_exactly(fd.get(), 4), "ping");
    return fd;
}

bool has_ipv6_loopback() {
    std::uint16_t port = 0;
    return listen_loopback(AF_INET6, port).get() >= 0;
}

// ---------------------------------------------------------------------------------------------
// Policy

TEST(Policy, RefusesBadItems) {
    const auto make = [](EgressItem item) { return Policy("e", {std::move(item)}); };
    EXPECT_THROW(make({"*.example.com", 443, {}}), std::invalid_argument);
    EXPECT_THROW(make({"", 443, {}}), std::invalid_argument);
    EXPECT_THROW(make({"exa mple.com", 443, {}}), std::invalid_argument);
    EXPECT_THROW(make({"user@example.com", 443, {}}), std::invalid_argument);
    EXPECT_THROW(make({std::string(254, 'a'), 443, {}}), std::invalid_argument);
    EXPECT_THROW(make({"example.com", 0, {}}), std::invalid_argument);
    EXPECT_THROW(make({"example.com", 443, {"example.net"}}), std::invalid_argument);
    EXPECT_THROW(make({"example.com", 443, {"10.0.0.1/8"}}), std::invalid_argument);
    EXPECT_THROW(Policy("e", {{"Example.com", 443, {}}, {"example.COM", 443, {}}}),
                 std::invalid_argument);
    // Positive control: the same shapes spelled right.
    EXPECT_NO_THROW(make({"example.com", 443, {"192.0.2.1", "2001:db8::1"}}));
    EXPECT_NO_THROW(Policy("e", {{"example.com", 443, {}}, {"example.com", 8443, {}}}));
    const Policy ipv6("e", {{"[::1]", 443, {}}});
    EXPECT_EQ(ipv6.items().at(0).host, "::1");
}

TEST(Policy, UnlistedTargetsNeverReachTheResolver) {
    FakeResolver fake;
    fake.names["api.example.com"] = {"192.0.2.10"};
    const Policy policy("agent", {{"api.example.com", 443, {}}}, fake.get());
    const Decision other = policy.decide({"other.example.com", 443, false});
    EXPECT_EQ(other.verdict, Decision::Verdict::refuse);
    EXPECT_NE(other.reason.find("not listed"), std::string::npos);
    const Decision port = policy.decide({"api.example.com", 8443, false});
    EXPECT_EQ(port.verdict, Decision::Verdict::refuse);
    EXPECT_NE(port.reason.find("port 8443"), std::string::npos);
    EXPECT_EQ(fake.calls->load(), 0);
    // Positive control: the listed pair is resolved and allowed, on the item's port.
    const Decision listed = policy.decide({"api.example.com", 443, false});
    EXPECT_EQ(fake.calls->load(), 1);
    ASSERT_EQ(listed.verdict, Decision::Verdict::allow);
    ASSERT_EQ(listed.addresses.size(), 1u);
    EXPECT_EQ(listed.addresses[0].text(), "192.0.2.10");
    EXPECT_EQ(listed.addresses[0].port(), 443);
}

TEST(Policy, APinnedItemIsNeverResolved) {
    FakeResolver fake;  // knows no name: a made-up host does not resolve
    const Policy policy("agent",
                        {{"api.tea-evaluate.test", 443, {"127.0.0.2", "::1", "127.0.0.1"}, true}},
                        fake.get());
    const Decision pinned = policy.decide({"api.tea-evaluate.test", 443, false});
    ASSERT_EQ(pinned.verdict, Decision::Verdict::allow) << pinned.reason;
    ASSERT_EQ(pinned.addresses.size(), 3u);
    EXPECT_EQ(pinned.addresses[0].text(), "127.0.0.2");
    EXPECT_EQ(pinned.addresses[1].text(), "::1");
    EXPECT_EQ(pinned.addresses[2].text(), "127.0.0.1");
    EXPECT_EQ(pinned.addresses[2].port(), 443);
    // The pin opens its own host and port only, and never resolves another name.
    EXPECT_EQ(policy.decide({"other.tea-evaluate.test", 443, false}).verdict,
              Decision::Verdict::refuse);
    EXPECT_EQ(policy.decide({"api.tea-evaluate.test", 8443, false}).verdict,
              Decision::Verdict::refuse);
    EXPECT_EQ(policy.decide({"127.0.0.1", 443, false}).verdict, Decision::Verdict::refuse);
    EXPECT_EQ(fake.calls->load(), 0);
    // The control: the same addresses as a filter resolve the name, which does not resolve.
    const Policy filter("agent", {{"api.tea-evaluate.test", 443, {"127.0.0.1"}}}, fake.get());
    EXPECT_EQ(filter.decide({"api.tea-evaluate.test", 443, false}).verdict,
              Decision::Verdict::unresolved);
    EXPECT_EQ(fake.calls->load(), 1);
}

TEST(Policy, RefusesBadPins) {
    const auto make = [](EgressItem item) { return Policy("e", {std::move(item)}); };
    EXPECT_THROW(make({"api.example.com", 443, {}, true}), std::invalid_argument);
    EXPECT_THROW(make({"api.example.com", 443, {"api.example.net"}, true}), std::invalid_argument);
    EXPECT_THROW(make({"127.0.0.1", 443, {"127.0.0.2"}, true}), std::invalid_argument);
    EXPECT_THROW(make({"::1", 443, {"127.0.0.1"}, true}), std::invalid_argument);
    // Positive control: a name pinned to loopback, and an address pinned to itself.
    EXPECT_NO_THROW(make({"api.example.com", 443, {"127.0.0.1", "::1"}, true}));
    EXPECT_NO_THROW(make({"127.0.0.1", 443, {"127.0.0.1"}, true}));
}

TEST(Policy, KeepsOnlyTheAddressesTheItemNames) {
    FakeResolver fake;
    fake.names["pinned.example"] = {"192.0.2.1", "::ffff:192.0.2.2", "2001:db8::3"};
    fake.names["rebound.example"] = {"127.0.0.1"};
    const Policy policy("agent",
                        {{"pinned.example", 443, {"192.0.2.2", "2001:db8::3"}},
                         {"rebound.example", 443, {"192.0.2.1"}},
                         {"missing.example", 443, {}}},
                        fake.get());
    const Decision pinned = policy.decide({"pinned.example", 443, false});
    ASSERT_EQ(pinned.verdict, Decision::Verdict::allow);
    ASSERT_EQ(pinned.addresses.size(), 2u);
    EXPECT_EQ(pinned.addresses[0].text(), "::ffff:192.0.2.2");
    EXPECT_EQ(pinned.addresses[1].text(), "2001:db8::3");
    const Decision rebound = policy.decide({"rebound.example", 443, false});
    EXPECT_EQ(rebound.verdict, Decision::Verdict::refuse);
    EXPECT_EQ(rebound.resolved, "127.0.0.1");
    EXPECT_NE(rebound.reason.find("127.0.0.1"), std::string::npos);
    const Decision missing = policy.decide({"missing.example", 443, false});
    EXPECT_EQ(missing.verdict, Decision::Verdict::unresolved);
}

TEST(Policy, AnUnpinnedNameNeverReachesThisMachineOrItsLink) {
    // DNS rebinding, or a name that simply resolves there: the host's loopback services and a
    // cloud's metadata service (169.254.169.254) hold what no target may reach.
    FakeResolver fake;
    fake.names["metadata.example"] = {"169.254.169.254"};
    fake.names["loopback.example"] = {"127.0.0.1", "::1"};
    fake.names["mapped.example"] = {"::ffff:127.0.0.2"};
    fake.names["zero.example"] = {"0.0.0.0"};
    fake.names["link6.example"] = {"fe80::1"};
    fake.names["mixed.example"] = {"127.0.0.1", "192.0.2.5"};
    fake.names["pinned.example"] = {"127.0.0.1"};
    fake.names["127.0.0.1"] = {"127.0.0.1"};
    fake.names["::1"] = {"::1"};
    const Policy policy("agent",
                        {{"metadata.example", 80, {}},
                         {"loopback.example", 443, {}},
                         {"mapped.example", 443, {}},
                         {"zero.example", 443, {}},
                         {"link6.example", 443, {}},
                         {"mixed.example", 443, {}},
                         {"pinned.example", 443, {"127.0.0.1"}},
                         {"127.0.0.1", 8080, {}},
                         {"[::1]", 8080, {}}},
                        fake.get());
    for (const auto &[host, port] :
         std::vector<std::pair<std::string, std::uint16_t>>{{"metadata.example", 80},
                                                            {"loopback.example", 443},
                                                            {"mapped.example", 443},
                                                            {"zero.example", 443},
                                                            {"link6.example", 443}}) {
        const Decision d = policy.decide({host, port, false});
        EXPECT_EQ(d.verdict, Decision::Verdict::refuse) << host;
        EXPECT_NE(d.reason.find("on this machine or its link"), std::string::npos) << d.reason;
        EXPECT_TRUE(d.addresses.empty()) << host;
    }
    // A name that also resolves elsewhere keeps only the other addresses.
    const Decision mixed = policy.decide({"mixed.example", 443, false});
    ASSERT_EQ(mixed.verdict, Decision::Verdict::allow);
    ASSERT_EQ(mixed.addresses.size(), 1u);
    EXPECT_EQ(mixed.addresses[0].text(), "192.0.2.5");
    // The controls: an item that pins the address, or names it as its host, reaches it.
    const Decision pinned = policy.decide({"pinned.example", 443, false});
    ASSERT_EQ(pinned.verdict, Decision::Verdict::allow) << pinned.reason;
    EXPECT_EQ(pinned.addresses.at(0).text(), "127.0.0.1");
    EXPECT_EQ(policy.decide({"127.0.0.1", 8080, false}).verdict, Decision::Verdict::allow);
    EXPECT_EQ(policy.decide({"::1", 8080, false}).verdict, Decision::Verdict::allow);
}

TEST(Policy, AnUnpinnedNameNeverReachesThisHostsOwnAddressesOrAMetadataService) {
    // The host's LAN and bridge addresses reach its services as loopback does; some clouds serve
    // their metadata away from 169.254.169.254.
    FakeResolver fake;
    fake.names["lan.example"] = {"10.0.2.15"};
    fake.names["bridge.example"] = {"172.17.0.1"};
    fake.names["alibaba.example"] = {"100.100.100.200"};
    fake.names["oracle.example"] = {"192.0.0.192"};
    fake.names["ec2v6.example"] = {"fd00:ec2::254"};
    fake.names["neighbour.example"] = {"10.0.2.99"};
    fake.names["pinned.example"] = {"10.0.2.15"};
    const auto own = [] {
        return std::vector<SocketAddress>{*SocketAddress::parse("10.0.2.15", 0),
                                          *SocketAddress::parse("172.17.0.1", 0)};
    };
    const Policy policy("agent",
                        {{"lan.example", 443, {}},
                         {"bridge.example", 443, {}},
                         {"alibaba.example", 80, {}},
                         {"oracle.example", 80, {}},
                         {"ec2v6.example", 80, {}},
                         {"neighbour.example", 443, {}},
                         {"pinned.example", 443, {"10.0.2.15"}}},
                        fake.get(), own);
    for (const auto &[host, port] :
         std::vector<std::pair<std::string, std::uint16_t>>{{"lan.example", 443},
                                                            {"bridge.example", 443},
                                                            {"alibaba.example", 80},
                                                            {"oracle.example", 80},
                                                            {"ec2v6.example", 80}}) {
        const Decision d = policy.decide({host, port, false});
        EXPECT_EQ(d.verdict, Decision::Verdict::refuse) << host;
        EXPECT_NE(d.reason.find("on this machine or its link"), std::string::npos) << d.reason;
    }
    // The controls: another machine of the same network, and the host's address pinned.
    EXPECT_EQ(policy.decide({"neighbour.example", 443, false}).verdict, Decision::Verdict::allow);
    EXPECT_EQ(policy.decide({"pinned.example", 443, false}).verdict, Decision::Verdict::allow);
    // The real source of this host's addresses finds at least its loopback.
    EXPECT_FALSE(addresses_of_this_host().empty());
}

TEST(Policy, RealResolverFindsLocalhost) {
    const Resolution r = resolve_with_getaddrinfo("localhost", 80);
    ASSERT_EQ(r.status, Resolution::Status::ok) << r.error;
    ASSERT_FALSE(r.addresses.empty());
    bool loopback = false;
    for (const SocketAddress &a : r.addresses) {
        loopback = loopback || a.text() == "127.0.0.1" || a.text() == "::1";
    }
    EXPECT_TRUE(loopback);
}

// ---------------------------------------------------------------------------------------------
// The proxy against raw clients

TEST(ConnectProxy, TunnelsToAnAllowedTarget) {
    EchoServer echo;
    ASSERT_TRUE(echo.ok());
    const std::string target = "127.0.0.1:" + std::to_string(echo.port());
    RunningProxy proxy(Policy("agent", {{"127.0.0.1", echo.port(), {}}}));
    struct stat info {};
    ASSERT_EQ(::stat(proxy.socket().c_str(), &info), 0);
    EXPECT_TRUE(S_ISSOCK(info.st_mode));
    EXPECT_EQ(info.st_mode & 0777, 0600u);

    Fd fd = open_echo_tunnel(proxy.socket(), target);
    ASSERT_GE(fd.get(), 0);
    // The client half-closes; the echo server sees it, finishes and closes; so does the tunnel.
    send_all(fd.get(), "bye");
    ::shutdown(fd.get(), SHUT_WR);
    EXPECT_EQ(read_all(fd.get()), "bye");
    EXPECT_EQ(proxy.records().tunnels_opened, 1u);
    EXPECT_TRUE(proxy.records().refusals.empty());
}

TEST(ConnectProxy, BytesSentBehindTheHeadGoThroughTheTunnel) {
    EchoServer echo;
    RunningProxy proxy(Policy("agent", {{"127.0.0.1", echo.port(), {}}}));
    Fd fd = connect_unix(proxy.socket());
    send_all(fd.get(), connect_head("127.0.0.1:" + std::to_string(echo.port())) + "early");
    EXPECT_EQ(status_line(read_head(fd.get())), "HTTP/1.1 200 Connection established");
    EXPECT_EQ(read_exactly(fd.get(), 5), "early");
}

class BulkTunnel : public ::testing::TestWithParam<bool> {};

TEST_P(BulkTunnel, CarriesEveryByteBothWays) {
    EchoServer echo;
    ProxyOptions options = RunningProxy::fast_options();
    options.use_splice = GetParam();
    options.buffer_bytes = std::size_t{64} * 1024;
    RunningProxy proxy(Policy("agent", {{"localhost", echo.port(), {"127.0.0.1"}}}), options);
    Fd fd = open_echo_tunnel(proxy.socket(), "localhost:" + std::to_string(echo.port()));
    ASSERT_GE(fd.get(), 0);
    std::string payload(8 << 20, '\0');
    std::uint32_t x = 12345;
    for (char &c : payload) {
        x = x * 1103515245u + 12345u;
        c = static_cast<char>(x >> 24);
    }
    std::thread writer([&] {
        send_all(fd.get(), payload);
        ::shutdown(fd.get(), SHUT_WR);
    });
    const std::string back = read_all(fd.get());
    writer.join();
    EXPECT_EQ(back.size(), payload.size());
    EXPECT_TRUE(back == payload);
}

INSTANTIATE_TEST_SUITE_P(SpliceAndBuffer, BulkTunnel, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool> &p) {
                             return p.param ? "splice" : "buffer";
                         });

TEST(ConnectProxy, RefusesAnUnlistedHostBeforeResolvingIt) {
    FakeResolver fake;
    fake.names["allowed.example"] = {"127.0.0.1"};
    RunningProxy proxy(Policy("my-agent", {{"allowed.example", 443, {}}}, fake.get()));
    const std::string response = ask(proxy.socket(), connect_head("Other.Example:443"));
    EXPECT_EQ(status_line(response), "HTTP/1.1 403 Forbidden");
    EXPECT_NE(response.find("other.example:443"), std::string::npos) << response;
    EXPECT_NE(response.find("\"my-agent\""), std::string::npos) << response;
    EXPECT_NE(response.find("not listed"), std::string::npos) << response;
    EXPECT_EQ(fake.calls->load(), 0);
    const ProxyRecords records = proxy.records();
    ASSERT_EQ(records.refusals.size(), 1u);
    EXPECT_EQ(records.refusals[0].status, 403);
    EXPECT_EQ(records.refusals[0].host, "other.example");
    EXPECT_EQ(records.refusals[0].port, 443);
    EXPECT_EQ(records.refusals[0].entry, "my-agent");
    EXPECT_EQ(records.refusals[0].address, "");
    EXPECT_EQ(records.refusals[0].count, 1u);
    EXPECT_EQ(records.tunnels_opened, 0u);
}

TEST(ConnectProxy, RefusesAnotherPortOfAListedHost) {
    EchoServer echo;
    const std::uint16_t other = closed_port();
    RunningProxy proxy(Policy("agent", {{"127.0.0.1", echo.port(), {}}}));
    const std::string response =
        ask(proxy.socket(), connect_head("127.0.0.1:" + std::to_string(other)));
    EXPECT_EQ(status_line(response), "HTTP/1.1 403 Forbidden");
    EXPECT_NE(response.find("port " + std::to_string(other) + " is not listed"), std::string::npos);
    // Positive control: the listed port.
    EXPECT_GE(open_echo_tunnel(proxy.socket(), "127.0.0.1:" + std::to_string(echo.port())).get(),
              0);
}

TEST(ConnectProxy, AnswersOtherMethods405) {
    EchoServer echo;
    RunningProxy proxy(Policy("agent", {{"127.0.0.1", echo.port(), {}}}));
    const std::string url = "http://127.0.0.1:" + std::to_string(echo.port()) + "/";
    for (const std::string method : {"GET", "POST", "connect", "OPTIONS"}) {
        const std::string response =
            ask(proxy.socket(), method + " " + url + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        EXPECT_EQ(status_line(response), "HTTP/1.1 405 Method Not Allowed") << method;
        EXPECT_NE(response.find("Allow: CONNECT"), std::string::npos);
    }
    EXPECT_EQ(echo.accepted(), 0);
    const ProxyRecords records = proxy.records();
    ASSERT_EQ(records.refusals.size(), 4u);
    EXPECT_EQ(records.refusals[0].status, 405);
    EXPECT_EQ(records.refusals[0].host, url);
}

TEST(ConnectProxy, AnswersMalformedHeads400) {
    EchoServer echo;
    const std::string good = "127.0.0.1:" + std::to_string(echo.port());
    RunningProxy proxy(Policy("agent", {{"127.0.0.1", echo.port(), {}}}));
    using namespace std::string_literals;
    std::string too_many = "CONNECT " + good + " HTTP/1.1\r\n";
    for (int i = 0; i < 101; ++i) too_many += "X-" + std::to_string(i) + ": v\r\n";
    const std::vector<std::string> corpus = {
        "CONNECT " + good + "\r\n\r\n",
        "CONNECT " + good + " HTTP/1.1\n\n",
        "CONNECT " + good + " HTTP/1.1\r\nHost: x\n\r\n",
        "CONNECT  " + good + " HTTP/1.1\r\n\r\n",
        "CONNECT " + good + " HTTP/2\r\n\r\n",
        "CONNECT " + good + " HTTP/1.1\r\n folded: x\r\n\r\n",
        "CONNECT " + good + " HTTP/1.1\r\nBad Name: x\r\n\r\n",
        "CONNECT " + good + " HTTP/1.1\r\nX: \x01\r\n\r\n",
        "CONNECT " + good + " HTTP/1.1\r\nX: a\0b\r\n\r\n"s,
        "CONNECT " + good + " HTTP/1.1\rX\r\n\r\n",
        "\r\n\r\n",
        "CONNECT " + good + " HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
        "CONNECT " + good + " HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        too_many + "\r\n",
        "CONNECT " + good + " HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n",
        std::string(kMaxHeadBytes + 10, 'A'),
    };
    for (const std::string &head : corpus) {
        const std::string response = ask(proxy.socket(), head);
        EXPECT_EQ(status_line(response), "HTTP/1.1 400 Bad Request") << head.substr(0, 80);
    }
    EXPECT_EQ(echo.accepted(), 0);
    // Positive control: a well-formed head with a zero Content-Length opens the tunnel.
    Fd fd = connect_unix(proxy.socket());
    send_all(fd.get(), "CONNECT " + good + " HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(status_line(read_head(fd.get())), "HTTP/1.1 200 Connection established");
}

TEST(ConnectProxy, AnswersBadHostSpellings400) {
    FakeResolver fake;
    RunningProxy proxy(Policy("agent", {{"example.com", 443, {}}}, fake.get()));
    const std::vector<std::string> hosts = {
        "*.example.com:443", "exa%6dple.com:443", "user@example.com:443",
        "example.com.:443",  "example..com:443",  std::string(254, 'a') + ":443",
        "[::1%25lo]:443",    "[1.2.3.4]:443",     "::1:443",
        "example.com:0443",  "example.com:+443",  "example.com:65536",
        "example.com",       "example.com:0",     "[::1]",
        "example.com/x:443", "example.com\\:443", "ex_ample.com:443:1"};
    for (const std::string &host : hosts) {
        const std::string response = ask(proxy.socket(), connect_head(host));
        EXPECT_EQ(status_line(response), "HTTP/1.1 400 Bad Request") << host;
    }
    EXPECT_EQ(fake.calls->load(), 0);
}

TEST(ConnectProxy, AnswersAnUnresolvableName502) {
    FakeResolver fake;  // knows no name: nothing leaves this machine
    RunningProxy proxy(Policy("agent", {{"nowhere.invalid", 443, {}}}, fake.get()));
    const std::string response = ask(proxy.socket(), connect_head("nowhere.invalid:443"));
    EXPECT_EQ(status_line(response), "HTTP/1.1 502 Bad Gateway");
    EXPECT_NE(response.find("does not resolve"), std::string::npos) << response;
    EXPECT_EQ(fake.calls->load(), 1);
    const ProxyRecords records = proxy.records();
    ASSERT_EQ(records.refusals.size(), 1u);
    EXPECT_EQ(records.refusals[0].status, 502);
    EXPECT_EQ(records.refusals[0].host, "nowhere.invalid");
}

TEST(ConnectProxy, RefusesAResolvedAddressTheItemDoesNotName) {
    EchoServer echo;
    const std::string target = "localhost:" + std::to_string(echo.port());
    // The real resolver: localhost comes from /etc/hosts.
    RunningProxy pinned(Policy("agent", {{"localhost", echo.port(), {"127.0.0.2"}}}));
    const std::string response = ask(pinned.socket(), connect_head(target));
    EXPECT_EQ(status_line(response), "HTTP/1.1 403 Forbidden");
    EXPECT_NE(response.find("127.0.0.2"), std::string::npos) << response;
    const ProxyRecords records = pinned.records();
    ASSERT_EQ(records.refusals.size(), 1u);
    EXPECT_NE(records.refusals[0].address.find("127.0.0.1"), std::string::npos);
    EXPECT_EQ(echo.accepted(), 0);
    // Positive control: the address localhost resolves to, named.
    RunningProxy named(Policy("agent", {{"localhost", echo.port(), {"127.0.0.1", "::1"}}}));
    EXPECT_GE(open_echo_tunnel(named.socket(), target).get(), 0);
}

TEST(ConnectProxy, AnswersASlowLookup502) {
    const Resolver slow = [](const std::string &, std::uint16_t) {
        std::this_thread::sleep_for(800ms);
        return Resolution{Resolution::Status::no_such_name, {}, "too late"};
    };
    ProxyOptions options = RunningProxy::fast_options();
    options.resolve_timeout = 200ms;
    options.resolver_threads = 1;
    RunningProxy proxy(Policy("agent", {{"slow.example", 443, {}}}, slow), options);
    const auto started = Clock::now();
    const std::string response = ask(proxy.socket(), connect_head("slow.example:443"));
    EXPECT_EQ(status_line(response), "HTTP/1.1 502 Bad Gateway");
    EXPECT_NE(response.find("took longer than 200 ms"), std::string::npos) << response;
    EXPECT_LT(Clock::now() - started, 700ms);
}

TEST(ConnectProxy, TriesEachAllowedAddressThen502) {
    EchoServer echo;  // on 127.0.0.1 only, so 127.0.0.2 refuses the connection
    FakeResolver fake;
    fake.names["two.example"] = {"127.0.0.2", "127.0.0.1"};
    fake.names["dead.example"] = {"127.0.0.2", "127.0.0.3"};
    RunningProxy proxy(Policy("agent",
                              {{"two.example", echo.port(), {"127.0.0.2", "127.0.0.1"}},
                               {"dead.example", echo.port(), {"127.0.0.2", "127.0.0.3"}}},
                              fake.get()));
    EXPECT_GE(open_echo_tunnel(proxy.socket(), "two.example:" + std::to_string(echo.port())).get(),
              0);
    const std::string response =
        ask(proxy.socket(), connect_head("dead.example:" + std::to_string(echo.port())));
    EXPECT_EQ(status_line(response), "HTTP/1.1 502 Bad Gateway");
    EXPECT_NE(response.find("127.0.0.2"), std::string::npos) << response;
    EXPECT_NE(response.find("127.0.0.3"), std::string::npos) << response;
    EXPECT_EQ(proxy.records().tunnels_opened, 1u);
}

TEST(ConnectProxy, TunnelsAPinnedMadeUpNameToItsAddressesInOrder) {
    EchoServer echo;  // on 127.0.0.1 only: 127.0.0.2, tried first, refuses the connection
    FakeResolver fake;
    const std::string target = "api.tea-evaluate.test:" + std::to_string(echo.port());
    RunningProxy pinned(
        Policy("agent", {{"api.tea-evaluate.test", echo.port(), {"127.0.0.2", "127.0.0.1"}, true}},
               fake.get()));
    EXPECT_GE(open_echo_tunnel(pinned.socket(), target).get(), 0);
    EXPECT_EQ(fake.calls->load(), 0);
    EXPECT_TRUE(pinned.records().refusals.empty());
    // The control: the same item as a filter asks the resolver, and the made-up name gets 502.
    RunningProxy filter(
        Policy("agent", {{"api.tea-evaluate.test", echo.port(), {"127.0.0.1"}}}, fake.get()));
    EXPECT_EQ(status_line(ask(filter.socket(), connect_head(target))), "HTTP/1.1 502 Bad Gateway");
    EXPECT_EQ(fake.calls->load(), 1);
    EXPECT_EQ(echo.accepted(), 1);
}

TEST(ConnectProxy, TunnelsToAnIpv6Literal) {
    if (!has_ipv6_loopback()) GTEST_SKIP() << "no ::1 on this machine";
    EchoServer echo(AF_INET6);
    RunningProxy proxy(Policy("agent", {{"[::1]", echo.port(), {}}}));
    EXPECT_GE(open_echo_tunnel(proxy.socket(), "[::1]:" + std::to_string(echo.port())).get(), 0);
    EXPECT_GE(open_echo_tunnel(proxy.socket(), "[0:0::0:1]:" + std::to_string(echo.port())).get(),
              0);
}

TEST(ConnectProxy, Answers503AfterItsTunnels) {
    EchoServer echo;
    const std::string target = "127.0.0.1:" + std::to_string(echo.port());
    RunningProxy proxy(Policy("agent", {{"127.0.0.1", echo.port(), {}}}));
    for (int i = 0; i < 128; ++i) {
        Fd fd = open_echo_tunnel(proxy.socket(), target);
        ASSERT_GE(fd.get(), 0) << "tunnel " << i + 1;
    }
    const std::string response = ask(proxy.socket(), connect_head(target));
    EXPECT_EQ(status_line(response), "HTTP/1.1 503 Service Unavailable");
    EXPECT_NE(response.find("128"), std::string::npos);
    EXPECT_EQ(echo.accepted(), 128);
    const ProxyRecords records = proxy.records();
    EXPECT_EQ(records.tunnels_opened, 128u);
    ASSERT_EQ(records.refusals.size(), 1u);
    EXPECT_EQ(records.refusals[0].status, 503);
}

TEST(ConnectProxy, CutsOffASlowHead) {
    EchoServer echo;
    ProxyOptions options = RunningProxy::fast_options();
    options.head_timeout = 300ms;
    RunningProxy proxy(Policy("agent", {{"127.0.0.1", echo.port(), {}}}), options);
    // Slowloris: a byte every 50 ms does not extend the deadline.
    Fd fd = connect_unix(proxy.socket());
    const auto started = Clock::now();
    const std::string head = "CONNECT 127.0.0.1:" + std::to_string(echo.port()) + " HTTP/1.1\r\n";
    bool cut = false;
    for (const char c : head) {
        if (::send(fd.get(), &c, 1, MSG_NOSIGNAL) != 1) {
            cut = true;
            break;
        }
        std::this_thread::sleep_for(50ms);
        if (Clock::now() - started > 3s) break;
    }
    const std::string response = read_all(fd.get());
    const auto elapsed = Clock::now() - started;
    EXPECT_TRUE(cut || response.find("408") != std::string::npos) << response;
    EXPECT_GE(elapsed, 250ms);
    EXPECT_LT(elapsed, 2500ms);
    // A client that sends nothing at all is cut off as well.
    Fd silent = connect_unix(proxy.socket());
    const auto silent_start = Clock::now();
    EXPECT_NE(read_all(silent.get()).find("408"), std::string::npos);
    EXPECT_LT(Clock::now() - silent_start, 1500ms);
    // Positive control: a prompt client still gets its tunnel.
    EXPECT_GE(open_echo_tunnel(proxy.socket(), "127.0.0.1:" + std::to_string(echo.port())).get(),
              0);
}

TEST(ConnectProxy, ClosesAnIdleTunnel) {
    EchoServer echo;
    ProxyOptions options = RunningProxy::fast_options();
    options.idle_timeout = 300ms;
    RunningProxy proxy(Policy("agent", {{"127.0.0.1", echo.port(), {}}}), options);
    Fd fd = open_echo_tunnel(proxy.socket(), "127.0.0.1:" + std::to_string(echo.port()));
    const auto started = Clock::now();
    EXPECT_EQ(read_all(fd.get()), "");
    EXPECT_LT(Clock::now() - started, 2s);
}

TEST(ConnectProxy, BoundsConcurrentConnections) {
    EchoServer echo;
    ProxyOptions options = RunningProxy::fast_options();
    options.max_connections = 2;
    RunningProxy proxy(Policy("agent", {{"127.0.0.1", echo.port(), {}}}), options);
    Fd first = connect_unix(proxy.socket());
    Fd second = connect_unix(proxy.socket());
    std::this_thread::sleep_for(50ms);
    const std::string response = ask(proxy.socket(), connect_head("127.0.0.1:1"));
    EXPECT_EQ(status_line(response), "HTTP/1.1 503 Service Unavailable");
    first = Fd();
    second = Fd();
    std::this_thread::sleep_for(50ms);
    EXPECT_GE(open_echo_tunnel(proxy.socket(), "127.0.0.1:" + std::to_string(echo.port())).get(),
              0);
}

TEST(ConnectProxy, RecordsAreDedupedCappedAndCut) {
    FakeResolver fake;
    const std::string entry(600, 'e');
    RunningProxy proxy(Policy(entry, {{"allowed.example", 443, {}}}, fake.get()));
    // A 400 whose raw target is far longer than a record field.
    ask(proxy.socket(), "CONNECT " + std::string(2000, 'h') + ":443 HTTP/1.1\r\n\r\n");
    for (int i = 0; i < 60; ++i) {
        ask(proxy.socket(), connect_head("host-" + std::to_string(i) + ".example:443"));
    }
    ask(proxy.socket(), connect_head("host-0.example:443"));
    ask(proxy.socket(), connect_head("host-59.example:443"));
    const ProxyRecords records = proxy.records();
    ASSERT_EQ(records.refusals.size(), kMaxRefusalRecords);
    EXPECT_EQ(records.omitted, 12u);  // host-49..host-59, and host-59 again
    EXPECT_EQ(records.refusals[0].status, 400);
    EXPECT_EQ(records.refusals[0].host.size(), kMaxRecordFieldBytes);
    for (const RefusalRecord &r : records.refusals) {
        EXPECT_EQ(r.entry.size(), kMaxRecordFieldBytes);
        EXPECT_LE(r.reason.size(), kMaxRecordFieldBytes);
    }
    EXPECT_EQ(records.refusals[1].host, "host-0.example");
    EXPECT_EQ(records.refusals[1].count, 2u);
    EXPECT_EQ(fake.calls->load(), 0);
}

TEST(ConnectProxy, RecordsHoldPrintableTextOnly) {
    RunningProxy proxy(Policy("agent", {{"a.example", 443, {}}}));
    ask(proxy.socket(),
        "CONNECT a\xff\x01"
        "b:443 HTTP/1.1\r\n\r\n");
    const ProxyRecords records = proxy.records();
    ASSERT_EQ(records.refusals.size(), 1u);
    EXPECT_EQ(records.refusals[0].host, "a\\xff\\x01b:443");
}

TEST(ConnectProxy, StopClosesOpenTunnelsPromptlyAndRemovesTheSocket) {
    EchoServer echo;
    TempDir dir;
    const fs::path socket = dir.path() / "egress.sock";
    ConnectProxy proxy(Policy("agent", {{"127.0.0.1", echo.port(), {}}}));
    proxy.start(socket);
    EXPECT_TRUE(proxy.running());
    std::vector<Fd> tunnels;
    for (int i = 0; i < 3; ++i) {
        tunnels.push_back(open_echo_tunnel(socket, "127.0.0.1:" + std::to_string(echo.port())));
        ASSERT_GE(tunnels.back().get(), 0);
    }
    Fd waiting = connect_unix(socket);  // a connection still sending its head
    send_all(waiting.get(), "CONNECT 127.0.0.1");
    const auto started = Clock::now();
    proxy.stop();
    EXPECT_LT(Clock::now() - started, 1s);
    EXPECT_FALSE(proxy.running());
    EXPECT_FALSE(fs::exists(fs::symlink_status(socket)));
    for (const Fd &fd : tunnels) EXPECT_EQ(read_all(fd.get()), "");
    EXPECT_EQ(read_all(waiting.get()), "");
    proxy.stop();  // idempotent
    EXPECT_THROW(proxy.start(socket), std::logic_error);
}

std::vector<int> open_descriptors() {
    std::vector<int> fds;
    for (const auto &entry : fs::directory_iterator("/proc/self/fd")) {
        fds.push_back(std::stoi(entry.path().filename().string()));
    }
    std::sort(fds.begin(), fds.end());
    return fds;
}

TEST(ConnectProxy, EveryDescriptorIsCloseOnExecAndReleased) {
    EchoServer echo;
    std::vector<int> before = open_descriptors();
    {
        ProxyOptions options = RunningProxy::fast_options();
        RunningProxy proxy(Policy("agent", {{"127.0.0.1", echo.port(), {}}}), options);
        Fd tunnel = open_echo_tunnel(proxy.socket(), "127.0.0.1:" + std::to_string(echo.port()));
        ASSERT_GE(tunnel.get(), 0);
        ask(proxy.socket(), connect_head("other.example:443"));
        // A descriptor without close-on-exec would leak into every process the runtime starts.
        for (const int fd : open_descriptors()) {
            if (std::binary_search(before.begin(), before.end(), fd)) continue;
            const int flags = ::fcntl(fd, F_GETFD);
            if (flags < 0) continue;  // the directory listing's own descriptor, now closed
            EXPECT_NE(flags & FD_CLOEXEC, 0)
                << "descriptor " << fd << " -> "
                << fs::read_symlink("/proc/self/fd/" + std::to_string(fd));
        }
    }
    // Everything the proxy opened is closed again; the echo server keeps its accepted socket.
    EXPECT_EQ(open_descriptors().size(), before.size() + 1);
}

TEST(ConnectProxy, RefusesAnUnsafeSocketDirectory) {
    TempDir dir;
    const fs::path shared = dir.path() / "shared";
    fs::create_directory(shared);
    ::chmod(shared.c_str(), 0777);
    ConnectProxy proxy(Policy("agent", {{"a.example", 443, {}}}));
    EXPECT_THROW(proxy.start(shared / "egress.sock"), std::invalid_argument);
    const fs::path link = dir.path() / "link";
    fs::create_directory_symlink(dir.path(), link);
    EXPECT_THROW(proxy.start(link / "egress.sock"), std::invalid_argument);
    EXPECT_THROW(proxy.start(dir.path() / std::string(200, 'x')), std::invalid_argument);
    // An existing file is never replaced.
    std::ofstream(dir.path() / "taken") << "x";
    EXPECT_THROW(proxy.start(dir.path() / "taken"), std::system_error);
    EXPECT_EQ(slurp(dir.path() / "taken"), "x");
    // Positive control: the private directory itself.
    EXPECT_NO_THROW(proxy.start(dir.path() / "egress.sock"));
}

// ---------------------------------------------------------------------------------------------
// Real clients over TLS: curl and Python's urllib through a forwarder, as a target would.

class RealClients : public ::testing::Test {
   protected:
    static void SetUpTestSuite() { tls_ = std::make_unique<TlsServer>(); }
    static void TearDownTestSuite() { tls_.reset(); }
    void SetUp() override {
        if (!tls_->error().empty()) GTEST_FAIL() << tls_->error();
    }
    static std::string url(const std::string &host) {
        return "https://" + host + ":" + std::to_string(tls_->port()) + "/";
    }
    static RunResult curl(const Forwarder &forwarder, const std::string &target,
                          const fs::path &dir) {
        return run({"curl", "-q", "-sS", "--max-time", "15", "--proxy", forwarder.url(), "--cacert",
                    tls_->cert().string(), target},
                   dir);
    }
    static inline std::unique_ptr<TlsServer> tls_;
};

TEST_F(RealClients, CurlReachesAnAllowedTlsServer) {
    // "localhost" names this machine: its item pins the loopback addresses to reach them.
    RunningProxy proxy(Policy("agent", {{"127.0.0.1", tls_->port(), {}},
                                        {"localhost", tls_->port(), {"127.0.0.1", "::1"}}}));
    Forwarder forwarder(proxy.socket());
    const RunResult by_address = curl(forwarder, url("127.0.0.1"), proxy.dir());
    EXPECT_EQ(by_address.exit_code, 0) << by_address.err;
    EXPECT_EQ(by_address.out, "tea-tls-ok\n");
    const RunResult by_name = curl(forwarder, url("localhost"), proxy.dir());
    EXPECT_EQ(by_name.exit_code, 0) << by_name.err;
    EXPECT_EQ(by_name.out, "tea-tls-ok\n");
    EXPECT_EQ(proxy.records().tunnels_opened, 2u);
    EXPECT_TRUE(proxy.records().refusals.empty());
}

TEST_F(RealClients, CurlIsRefusedAnUnlistedHost) {
    RunningProxy proxy(Policy("agent", {{"127.0.0.1", tls_->port(), {}}}));
    Forwarder forwarder(proxy.socket());
    const RunResult refused = curl(forwarder, url("localhost"), proxy.dir());
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.err.find("403"), std::string::npos) << refused.err;
    const ProxyRecords records = proxy.records();
    ASSERT_EQ(records.refusals.size(), 1u);
    EXPECT_EQ(records.refusals[0].host, "localhost");
    EXPECT_EQ(records.refusals[0].port, tls_->port());
    // A plain http:// request through the same proxy is no CONNECT.
    const RunResult plain =
        run({"curl", "-q", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "15",
             "--proxy", forwarder.url(), "http://127.0.0.1:" + std::to_string(tls_->port()) + "/"},
            proxy.dir());
    EXPECT_EQ(plain.out, "405");
    // Positive control: the listed spelling.
    const RunResult allowed = curl(forwarder, url("127.0.0.1"), proxy.dir());
    EXPECT_EQ(allowed.out, "tea-tls-ok\n") << allowed.err;
}

TEST_F(RealClients, CurlIsRefusedALoopbackNameTheItemDoesNotPin) {
    RunningProxy proxy(Policy("agent", {{"localhost", tls_->port(), {}}}));
    Forwarder forwarder(proxy.socket());
    const RunResult refused = curl(forwarder, url("localhost"), proxy.dir());
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.err.find("403"), std::string::npos) << refused.err;
    ASSERT_EQ(proxy.records().refusals.size(), 1u);
    EXPECT_NE(proxy.records().refusals[0].reason.find("on this machine or its link"),
              std::string::npos)
        << proxy.records().refusals[0].reason;
    EXPECT_EQ(proxy.records().tunnels_opened, 0u);
    // The control: the same name with its addresses pinned reaches the server.
    RunningProxy pinned(Policy("agent", {{"localhost", tls_->port(), {"127.0.0.1", "::1"}}}));
    Forwarder through_pinned(pinned.socket());
    const RunResult allowed = curl(through_pinned, url("localhost"), pinned.dir());
    EXPECT_EQ(allowed.out, "tea-tls-ok\n") << allowed.err;
}

TEST_F(RealClients, PythonUrllibThroughTheProxy) {
    RunningProxy proxy(Policy("agent", {{"localhost", tls_->port(), {"127.0.0.1", "::1"}}}));
    Forwarder forwarder(proxy.socket());
    const std::string script = R"(import ssl, sys, urllib.request, urllib.error
context = ssl.create_default_context(cafile=sys.argv[3])
opener = urllib.request.build_opener(urllib.request.ProxyHandler({"https": sys.argv[1]}),
                                     urllib.request.HTTPSHandler(context=context))
try:
    print(opener.open(sys.argv[2], timeout=15).read().decode(), end="")
except OSError as error:
    print("refused:", error)
    sys.exit(3)
)";
    const RunResult ok =
        run({"python3", "-c", script, forwarder.url(), url("localhost"), tls_->cert().string()},
            proxy.dir());
    EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
    EXPECT_EQ(ok.out, "tea-tls-ok\n");
    const RunResult refused =
        run({"python3", "-c", script, forwarder.url(), url("127.0.0.1"), tls_->cert().string()},
            proxy.dir());
    EXPECT_EQ(refused.exit_code, 3) << refused.out << refused.err;
    EXPECT_NE(refused.out.find("403"), std::string::npos) << refused.out;
    EXPECT_EQ(proxy.records().tunnels_opened, 1u);
}

}  // namespace
}  // namespace tea::egress
