// The HTTP probe client (core/http/http_client.hpp) against real sockets: a server thread of the
// test's own that misbehaves as an evaluated service can, and Python's http.server as a real peer.
// Each attack sits beside a control where the same server behaves and the client reads it.
#include "http/http_client.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

#include "support/socket_io.hpp"
#include "util/fd.hpp"

namespace tea::http {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using test::send_all;

// The request head and the body its Content-Length announces (at most 64 KiB of either here).
std::string read_request(int fd) {
    std::string request;
    char buffer[4096];
    const auto whole = [&request] {
        const auto end = request.find("\r\n\r\n");
        if (end == std::string::npos) return false;
        const auto length = request.find("Content-Length: ");
        const std::size_t body =
            length < end ? std::strtoul(request.c_str() + length + 16, nullptr, 10) : 0;
        return request.size() >= end + 4 + body;
    };
    while (!whole() && request.size() < 65536) {
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
    }
    return request;
}

// Sends each piece after a pause, so that the client reads the response in those pieces.
void send_in_pieces(int fd, std::initializer_list<std::string_view> pieces) {
    for (const std::string_view piece : pieces) {
        if (!send_all(fd, piece)) return;
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
}

// Waits until the test ends the server (`stop` readable) or the client closes the connection.
void wait_for_stop(int client, int stop) {
    pollfd watched[2] = {{stop, POLLIN, 0}, {client, POLLIN, 0}};
    while (::poll(watched, 2, -1) >= 0 && watched[0].revents == 0) {
        if (watched[1].revents != 0) {
            char byte;
            if (::recv(client, &byte, 1, MSG_DONTWAIT) == 0) return;
        }
    }
}

// Returns true when `stop` became readable within `wait`.
bool stopped_within(int stop, milliseconds wait) {
    pollfd watched{stop, POLLIN, 0};
    return ::poll(&watched, 1, static_cast<int>(wait.count())) > 0;
}

// A loopback listener whose one connection a test's behaviour serves on a thread of its own.
class ServerThread {
   public:
    using Behaviour = std::function<void(int client, int stop)>;

    explicit ServerThread(Behaviour behaviour, int family = AF_INET) {
        listener_.reset(test::listen_loopback(family, port_));
        if (!listener_) return;
        int ends[2];
        if (::pipe2(ends, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
        stop_read_.reset(ends[0]);
        stop_write_.reset(ends[1]);
        thread_ = std::thread([this, behaviour = std::move(behaviour)] {
            pollfd watched[2] = {{listener_.get(), POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
            if (::poll(watched, 2, -1) <= 0 || watched[0].revents == 0) return;
            UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
            if (client) behaviour(client.get(), stop_read_.get());
        });
    }
    ~ServerThread() {
        stop_write_.reset();  // stop becomes readable (end of file)
        if (thread_.joinable()) thread_.join();
    }
    ServerThread(const ServerThread &) = delete;
    ServerThread &operator=(const ServerThread &) = delete;

    bool listening() const { return listener_.valid(); }
    std::uint16_t port() const { return port_; }

   private:
    UniqueFd listener_;
    UniqueFd stop_read_;
    UniqueFd stop_write_;
    std::uint16_t port_ = 0;
    std::thread thread_;
};

Request get(const std::string &target = "/") {
    return Request{"GET", target, {}, ""};
}

Exchange exchange_with(const ServerThread &server, const Request &request, milliseconds timeout,
                       const Limits &limits = {}) {
    return exchange_tcp("127.0.0.1", server.port(), request, timeout, limits);
}

bool says(const Exchange &exchange, const std::string &part) {
    return exchange.sentence.find(part) != std::string::npos;
}

TEST(HttpClient, SendsTheRequestWithTheRuntimesFraming) {
    std::string received;
    Exchange exchange;
    {
        ServerThread server([&](int client, int) {
            received = read_request(client);
            send_all(client, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        });
        Request request{"POST", "/items?x=1", {{"X-Probe", "yes"}}, "body"};
        exchange = exchange_with(server, request, 5s);
        EXPECT_NE(received.find("Host: 127.0.0.1:" + std::to_string(server.port()) + "\r\n"),
                  std::string::npos);
    }
    ASSERT_EQ(to_string(exchange.outcome), "response") << exchange.sentence;
    EXPECT_EQ(exchange.response.status, 200);
    EXPECT_EQ(exchange.response.body, "ok");
    EXPECT_EQ(exchange.raw_head, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n");
    EXPECT_TRUE(received.starts_with("POST /items?x=1 HTTP/1.1\r\n")) << received;
    EXPECT_NE(received.find("X-Probe: yes\r\n"), std::string::npos);
    EXPECT_NE(received.find("Content-Length: 4\r\n"), std::string::npos);
    EXPECT_NE(received.find("Connection: close\r\n\r\nbody"), std::string::npos);
    EXPECT_EQ(exchange.request_head + "body", received);
}

TEST(HttpClient, ServerThatNeverAnswersTimesOutAtTheDeadline) {
    ServerThread silent([](int client, int stop) {
        read_request(client);
        wait_for_stop(client, stop);
    });
    const auto exchange = exchange_with(silent, get(), 300ms);
    EXPECT_EQ(to_string(exchange.outcome), "timedOut");
    EXPECT_TRUE(says(exchange, "no whole response within 300 ms")) << exchange.sentence;
    EXPECT_TRUE(says(exchange, "the request was sent whole; nothing was received"))
        << exchange.sentence;
    EXPECT_GE(exchange.elapsed, 300ms);
    EXPECT_LT(exchange.elapsed, 800ms);

    // Control: the same server answering within the deadline is read.
    ServerThread answering([](int client, int) {
        read_request(client);
        send_all(client, "HTTP/1.1 204 No Content\r\n\r\n");
    });
    EXPECT_EQ(to_string(exchange_with(answering, get(), 300ms).outcome), "response");
}

TEST(HttpClient, ServerThatClosesMidBodySaysHowMuchCame) {
    ServerThread server([](int client, int) {
        read_request(client);
        send_all(client, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + std::string(40, 'x'));
    });
    const auto exchange = exchange_with(server, get(), 5s);
    EXPECT_EQ(to_string(exchange.outcome), "closed");
    EXPECT_TRUE(says(exchange, "after 40 of the 100 body bytes")) << exchange.sentence;
}

TEST(HttpClient, ServerThatClosesWithoutAnsweringIsClosed) {
    ServerThread server([](int client, int) { read_request(client); });
    const auto exchange = exchange_with(server, get(), 5s);
    EXPECT_EQ(to_string(exchange.outcome), "closed");
    EXPECT_TRUE(says(exchange, "without answering")) << exchange.sentence;
}

long max_resident_kib() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

TEST(HttpClient, AGibibyteIsCutAtTheLimitWithMemoryBounded) {
    constexpr std::size_t kGibibyte = std::size_t{1} << 30;
    std::atomic<std::size_t> sent{0};
    const long resident_before = max_resident_kib();
    {
        ServerThread flood([&](int client, int) {
            read_request(client);
            if (!send_all(client, "HTTP/1.1 200 OK\r\n\r\n")) return;
            const std::string block(std::size_t{1} << 20, 'x');
            while (sent < kGibibyte && send_all(client, block)) sent += block.size();
        });
        const auto exchange = exchange_with(flood, get(), 60s);
        EXPECT_EQ(to_string(exchange.outcome), "tooLarge");
        EXPECT_TRUE(says(exchange, "longer than the limit of 16777216 bytes")) << exchange.sentence;
        EXPECT_TRUE(exchange.response.body.empty());
    }
    // The client stopped reading at the limit: the server could send little more than it.
    EXPECT_LT(sent.load(), std::size_t{64} << 20);
    EXPECT_LT(max_resident_kib() - resident_before, 64 * 1024);
}

TEST(HttpClient, AnAnnouncedGibibyteIsRefusedBeforeItIsRead) {
    ServerThread server([](int client, int stop) {
        read_request(client);
        send_all(client, "HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n");
        wait_for_stop(client, stop);
    });
    const auto exchange = exchange_with(server, get(), 5s);
    EXPECT_EQ(to_string(exchange.outcome), "tooLarge");
    EXPECT_TRUE(says(exchange, "1073741824 bytes announced")) << exchange.sentence;
    EXPECT_LT(exchange.elapsed, 1s);
}

TEST(HttpClient, ABodyUnderTheLimitIsReadWhole) {
    const std::string body(std::size_t{1} << 20, 'y');
    ServerThread server([&](int client, int) {
        read_request(client);
        send_all(client, "HTTP/1.1 200 OK\r\n\r\n" + body);
    });
    Limits limits;
    limits.body_bytes = std::size_t{2} << 20;
    const auto exchange = exchange_with(server, get(), 10s, limits);
    ASSERT_EQ(to_string(exchange.outcome), "response") << exchange.sentence;
    EXPECT_EQ(exchange.response.body, body);
}

TEST(HttpClient, TheDeadlineHoldsOverallWhenTheServerTrickles) {
    ServerThread trickle([](int client, int stop) {
        read_request(client);
        const std::string response = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
        for (const char byte : response) {
            if (!send_all(client, std::string_view(&byte, 1)) || stopped_within(stop, 1s)) {
                return;
            }
        }
        wait_for_stop(client, stop);
    });
    const auto exchange = exchange_with(trickle, get(), 2500ms);
    EXPECT_EQ(to_string(exchange.outcome), "timedOut");
    EXPECT_TRUE(says(exchange, "response bytes were received")) << exchange.sentence;
    EXPECT_GE(exchange.elapsed, 2500ms);
    EXPECT_LT(exchange.elapsed, 3000ms);
}

// An event stream that stays open after what the caller waits for: the watch ends the read there,
// well before the deadline; without the watch the same stream holds the client to its deadline.
TEST(HttpClient, AWatchEndsAStreamThatStaysOpen) {
    const auto open_stream = [](int client, int stop) {
        read_request(client);
        send_in_pieces(client, {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                                "6\r\nfirst \r\n", "6\r\nanswer\r\n"});
        wait_for_stop(client, stop);
    };
    ServerThread watched_server(open_stream);
    int looks = 0;
    const auto watched = exchange_tcp(
        "127.0.0.1", watched_server.port(), get(), 5s, {}, [&](const Response &so_far) {
            ++looks;
            return so_far.status == 200 && so_far.body.find("answer") != std::string::npos;
        });
    ASSERT_EQ(to_string(watched.outcome), "response") << watched.sentence;
    EXPECT_TRUE(watched.ended_by_watch);
    EXPECT_EQ(watched.response.body, "first answer");
    EXPECT_GE(looks, 1);
    EXPECT_LT(watched.elapsed, 2s);

    ServerThread unwatched_server(open_stream);
    const auto unwatched = exchange_with(unwatched_server, get(), 300ms);
    EXPECT_EQ(to_string(unwatched.outcome), "timedOut");
    EXPECT_FALSE(unwatched.ended_by_watch);
}

TEST(HttpClient, InterimResponsesAreSkipped) {
    ServerThread server([](int client, int) {
        read_request(client);
        send_in_pieces(client, {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early",
                                " Hints\r\nLink: </style.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Le",
                                "ngth: 5\r\nX-Final: yes\r\n\r\nfinal"});
    });
    const auto exchange = exchange_with(server, get(), 5s);
    ASSERT_EQ(to_string(exchange.outcome), "response") << exchange.sentence;
    EXPECT_EQ(exchange.response.status, 200);
    ASSERT_EQ(exchange.response.headers.size(), 2u);
    EXPECT_EQ(exchange.response.headers[1].name, "X-Final");
    EXPECT_EQ(exchange.response.body, "final");
    EXPECT_TRUE(exchange.raw_head.starts_with("HTTP/1.1 200 OK\r\n"));
}

TEST(HttpClient, ChunkedWithExtensionsAndTrailersIsDecoded) {
    ServerThread server([](int client, int stop) {
        read_request(client);
        send_in_pieces(client,
                       {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nab",
                        "cd\r\n3\r", "\nefg\r\n0;last\r\nX-Checksum: 7\r\n\r\n"});
        wait_for_stop(client, stop);  // the end of the chunks ends the response, not a close
    });
    const auto exchange = exchange_with(server, get(), 5s);
    ASSERT_EQ(to_string(exchange.outcome), "response") << exchange.sentence;
    EXPECT_EQ(exchange.response.body, "abcdefg");
    EXPECT_LT(exchange.elapsed, 1s);
}

TEST(HttpClient, HeadResponseEndsAtItsHeadWhateverItsContentLength) {
    const auto announcing = [](int client, int stop) {
        read_request(client);
        send_all(client, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
        wait_for_stop(client, stop);
    };
    ServerThread head_server(announcing);
    const auto head = exchange_with(head_server, Request{"HEAD", "/", {}, ""}, 5s);
    ASSERT_EQ(to_string(head.outcome), "response") << head.sentence;
    EXPECT_TRUE(head.response.body.empty());
    EXPECT_LT(head.elapsed, 1s);

    // Control: a GET's response waits for the 1000 bytes announced.
    ServerThread get_server(announcing);
    EXPECT_EQ(to_string(exchange_with(get_server, get(), 300ms).outcome), "timedOut");
}

TEST(HttpClient, ALargeRequestToAServerThatNeverReadsTimesOut) {
    ServerThread deaf([](int client, int stop) { wait_for_stop(client, stop); });
    Request request{"POST", "/upload", {}, std::string(std::size_t{1} << 20, 'z')};
    const auto exchange = exchange_with(deaf, request, 500ms);
    EXPECT_EQ(to_string(exchange.outcome), "timedOut") << exchange.sentence;
    EXPECT_GE(exchange.elapsed, 500ms);
    EXPECT_LT(exchange.elapsed, 1000ms);
}

TEST(HttpClient, ARequestLargerThanTheSocketBuffersSaysHowMuchTheServiceTook) {
    ServerThread deaf([](int client, int stop) { wait_for_stop(client, stop); });
    Request request{"PUT", "/upload", {}, std::string(std::size_t{32} << 20, 'z')};
    const auto exchange = exchange_with(deaf, request, 500ms);
    EXPECT_EQ(to_string(exchange.outcome), "timedOut");
    EXPECT_TRUE(says(exchange, "the service took ")) << exchange.sentence;
    EXPECT_TRUE(says(
        exchange, " of the " + std::to_string(exchange.request_head.size() + request.body.size()) +
                      " request bytes"))
        << exchange.sentence;
    EXPECT_LT(exchange.elapsed, 1000ms);
}

TEST(HttpClient, AServiceThatResetsWhileTheRequestIsSentEndsClosed) {
    ServerThread resetting([](int client, int) {
        char head[256];
        (void)::recv(client, head, sizeof head, 0);
        const linger abort_on_close{1, 0};
        ::setsockopt(client, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof abort_on_close);
    });
    Request request{"PUT", "/upload", {}, std::string(std::size_t{32} << 20, 'z')};
    const auto exchange = exchange_with(resetting, request, 5s);
    EXPECT_EQ(to_string(exchange.outcome), "closed");
    EXPECT_LT(exchange.elapsed, 1s);
}

TEST(HttpClient, APeerGoneBeforeTheRequestDoesNotKillTheRuntimeWithSigpipe) {
    // A write to a stream whose reader is gone raises SIGPIPE, which would end the runtime.
    int ends[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends), 0);
    UniqueFd client(ends[0]);
    ::close(ends[1]);
    const auto exchange = http::exchange(client.get(), get(), "service", 1s);
    EXPECT_EQ(to_string(exchange.outcome), "closed");
    EXPECT_TRUE(says(exchange, "without answering; sending stopped after 0 of"))
        << exchange.sentence;
    EXPECT_TRUE(says(exchange, std::strerror(EPIPE))) << exchange.sentence;
}

TEST(HttpClient, AMalformedResponseIsRefusedWithItsReason) {
    ServerThread server([](int client, int stop) {
        read_request(client);
        send_all(client,
                 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "0\r\n\r\n");
        wait_for_stop(client, stop);
    });
    const auto exchange = exchange_with(server, get(), 5s);
    EXPECT_EQ(to_string(exchange.outcome), "malformed");
    EXPECT_TRUE(says(exchange, "both Content-Length and Transfer-Encoding")) << exchange.sentence;
    EXPECT_NE(exchange.raw_head.find("Transfer-Encoding: chunked"), std::string::npos);
}

TEST(HttpClient, ReachesAServiceOnIpv6Loopback) {
    ServerThread server(
        [](int client, int) {
            const std::string request = read_request(client);
            const bool bracketed = request.find("Host: [::1]:") != std::string::npos;
            send_all(client, std::string("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n") +
                                 (bracketed ? "y" : "n"));
        },
        AF_INET6);
    if (!server.listening()) GTEST_SKIP() << "no ::1 on this machine";
    const auto exchange = exchange_tcp("::1", server.port(), get(), 5s);
    ASSERT_EQ(to_string(exchange.outcome), "response") << exchange.sentence;
    EXPECT_EQ(exchange.response.body, "y");
}

TEST(HttpClient, ConnectFailuresAreNamed) {
    // A bound socket that does not listen: its port refuses connections.
    UniqueFd bound(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ASSERT_EQ(::bind(bound.get(), reinterpret_cast<sockaddr *>(&address), length), 0);
    ASSERT_EQ(::getsockname(bound.get(), reinterpret_cast<sockaddr *>(&address), &length), 0);
    const auto refused = exchange_tcp("127.0.0.1", ntohs(address.sin_port), get(), 1s);
    EXPECT_EQ(to_string(refused.outcome), "connectFailed");
    EXPECT_NE(refused.sentence.find("Connection refused"), std::string::npos) << refused.sentence;

    const auto remote = exchange_tcp("192.0.2.1", 80, get(), 1s);
    EXPECT_EQ(to_string(remote.outcome), "connectFailed");
    EXPECT_NE(remote.sentence.find("not a loopback IP address"), std::string::npos);
    EXPECT_EQ(to_string(exchange_tcp("localhost", 80, get(), 1s).outcome), "connectFailed");
}

TEST(HttpClient, RefusesARequestThatWouldFrameItself) {
    ServerThread server([](int client, int) { read_request(client); });
    Request smuggling = get();
    smuggling.headers.push_back({"Transfer-Encoding", "chunked"});
    EXPECT_THROW(exchange_with(server, smuggling, 1s), std::invalid_argument);
}

// Python's http.server, started by the test, printing its port on its first line.
class PythonServer {
   public:
    PythonServer() {
        static const char *script = R"PY(
import http.server, sys
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def do_GET(self):
        body = ("got " + self.path + " host=" + self.headers["Host"]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(201, "Made")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in (body[:3], body[3:]):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.wfile.write(b"0\r\n\r\n")
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
)PY";
        int out[2];
        if (::pipe2(out, O_CLOEXEC) != 0) return;
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(out[1], 1);
            ::execlp("python3", "python3", "-c", script, static_cast<char *>(nullptr));
            ::_exit(127);
        }
        ::close(out[1]);
        UniqueFd reader(out[0]);
        std::string line;
        char c;
        while (line.size() < 16 && ::read(reader.get(), &c, 1) == 1 && c != '\n') line += c;
        port_ = static_cast<std::uint16_t>(std::atoi(line.c_str()));
    }
    ~PythonServer() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    PythonServer(const PythonServer &) = delete;
    PythonServer &operator=(const PythonServer &) = delete;
    std::uint16_t port() const { return port_; }

   private:
    pid_t pid_ = -1;
    std::uint16_t port_ = 0;
};

TEST(HttpClient, TalksToPythonsHttpServer) {
    PythonServer python;
    ASSERT_NE(python.port(), 0) << "python3 did not start its server";
    const std::string host = "127.0.0.1:" + std::to_string(python.port());

    const auto got = exchange_tcp("127.0.0.1", python.port(), get("/some/path?q=1"), 10s);
    ASSERT_EQ(to_string(got.outcome), "response") << got.sentence;
    EXPECT_EQ(got.response.status, 200);
    EXPECT_EQ(got.response.body, "got /some/path?q=1 host=" + host);

    Request post{"POST", "/form", {{"Content-Type", "text/plain"}}, "posted body"};
    const auto posted = exchange_tcp("127.0.0.1", python.port(), post, 10s);
    ASSERT_EQ(to_string(posted.outcome), "response") << posted.sentence;
    EXPECT_EQ(posted.response.status, 201);
    EXPECT_EQ(posted.response.reason, "Made");
    EXPECT_EQ(posted.response.body, "posted body");
}

}  // namespace
}  // namespace tea::http
