#include "http/http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "http/http_response_parser.hpp"
#include "util/fd.hpp"

namespace tea::http {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kReadBytes = std::size_t{64} * 1024;

std::string errno_words(int error) {
    return std::strerror(error);
}

bool method_carries_body(const std::string &method) {
    return method == "POST" || method == "PUT" || method == "PATCH";
}

std::string compose_head(const Request &request, const std::string &host) {
    std::string head =
        request.method + " " + request.target + " HTTP/1.1\r\nHost: " + host + "\r\n";
    for (const Header &header : request.headers) {
        head += header.name + ": " + header.value + "\r\n";
    }
    if (!request.body.empty() || method_carries_body(request.method)) {
        head += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
    }
    head += "Connection: close\r\n\r\n";
    return head;
}

void check_request(const Request &request, const std::string &host) {
    std::optional<std::string> problem = invalid_method(request.method);
    if (!problem) problem = invalid_target(request.target);
    for (const Header &header : request.headers) {
        if (!problem) problem = invalid_header(header);
    }
    // The host is the runtime's own text, but a line break in it would end the head early.
    if (!problem &&
        (host.empty() || host.find_first_of(std::string_view("\r\n\0 ", 4)) != std::string::npos)) {
        problem = "the Host \"" + host + "\" is empty or holds a space, CR, LF or NUL";
    }
    if (problem) throw std::invalid_argument("HTTP request refused: " + *problem);
}

int poll_milliseconds(Clock::time_point deadline) {
    const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

// The bytes of the request still to send, head first, then body.
class Sender {
   public:
    Sender(std::string_view head, std::string_view body) : head_(head), body_(body) {}

    bool finished() const { return sent_ == head_.size() + body_.size(); }
    std::size_t sent() const { return sent_; }
    std::size_t total() const { return head_.size() + body_.size(); }

    // Sends what the socket takes now; an error other than EAGAIN is returned.
    int send_some(int fd) {
        while (!finished()) {
            const std::string_view rest =
                sent_ < head_.size() ? head_.substr(sent_) : body_.substr(sent_ - head_.size());
            // MSG_NOSIGNAL: a service that closes early must not kill the runtime with SIGPIPE.
            // MSG_MORE: the head and a body leave in one segment rather than two.
            const int more = sent_ < head_.size() && !body_.empty() ? MSG_MORE : 0;
            const ssize_t n =
                ::send(fd, rest.data(), rest.size(), MSG_DONTWAIT | MSG_NOSIGNAL | more);
            if (n < 0) {
                if (errno == EINTR) continue;
                return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : errno;
            }
            sent_ += static_cast<std::size_t>(n);
        }
        return 0;
    }

   private:
    std::string_view head_;
    std::string_view body_;
    std::size_t sent_ = 0;
};

std::string progress(const Sender &sender, const ResponseParser &parser) {
    std::string text = sender.finished()
                           ? "the request was sent whole"
                           : "the service took " + std::to_string(sender.sent()) + " of the " +
                                 std::to_string(sender.total()) + " request bytes";
    const std::size_t received = parser.received_bytes();
    text += received == 0 ? "; nothing was received"
                          : "; " + std::to_string(received) + " response bytes were received";
    return text;
}

bool loopback(const std::string &address, sockaddr_storage &storage, socklen_t &length,
              std::uint16_t port) {
    std::memset(&storage, 0, sizeof storage);
    auto *v4 = reinterpret_cast<sockaddr_in *>(&storage);
    if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        length = sizeof *v4;
        return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
    }
    auto *v6 = reinterpret_cast<sockaddr_in6 *>(&storage);
    if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        length = sizeof *v6;
        return IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
    }
    return false;
}

}  // namespace

std::string to_string(Outcome outcome) {
    switch (outcome) {
        case Outcome::response:
            return "response";
        case Outcome::timedOut:
            return "timedOut";
        case Outcome::closed:
            return "closed";
        case Outcome::malformed:
            return "malformed";
        case Outcome::tooLarge:
            return "tooLarge";
        case Outcome::connectFailed:
            return "connectFailed";
    }
    return "unknown";
}

namespace {

// The exchange of exchange() and exchange_tcp(), against one deadline set when the caller began
// (a connect's time counts), so that no piece of the exchange gets a timeout of its own.
Exchange exchange_until(int fd, const Request &request, const std::string &host,
                        Clock::time_point start, milliseconds timeout, const Limits &limits,
                        const BodyWatch &watch, int stop_fd) {
    const auto deadline = start + timeout;

    Exchange result;
    result.request_head = compose_head(request, host);
    Sender sender(result.request_head, request.body);
    ResponseParser parser(limits, request.method == "HEAD");
    std::string send_failure;
    const auto end = [&](Outcome outcome, std::string sentence) {
        result.outcome = outcome;
        result.sentence = std::move(sentence);
        result.raw_head = parser.received_head();
        if (outcome == Outcome::response) result.response = parser.take_response();
        result.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
        return std::move(result);
    };
    const auto closed = [&](std::string sentence) {
        if (!send_failure.empty()) sentence += "; " + send_failure;
        return end(Outcome::closed, std::move(sentence));
    };

    std::array<char, kReadBytes> buffer{};
    while (true) {
        const int wait = poll_milliseconds(deadline);
        if (wait == 0) {
            return end(Outcome::timedOut, "no whole response within " +
                                              std::to_string(timeout.count()) + " ms (" +
                                              progress(sender, parser) + ")");
        }
        const bool sending = send_failure.empty() && !sender.finished();
        std::array<pollfd, 2> fds{{{fd, static_cast<short>(POLLIN | (sending ? POLLOUT : 0)), 0},
                                   {stop_fd, POLLIN, 0}}};  // poll skips fd -1
        const int ready = ::poll(fds.data(), fds.size(), wait);
        if (ready < 0) {
            if (errno == EINTR) continue;
            return closed("waiting on the connection failed: " + errno_words(errno));
        }
        if (ready == 0) continue;
        const pollfd &watched = fds[0];
        if (watched.revents == 0 && (fds[1].revents & POLLIN) != 0) {
            result.stopped = true;
            return closed("the wait was stopped before the response was whole (" +
                          progress(sender, parser) + ")");
        }
        if (sending && (watched.revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
            if (const int error = sender.send_some(fd); error != 0) {
                // The service may still answer after refusing the rest of the request.
                send_failure = "sending stopped after " + std::to_string(sender.sent()) + " of " +
                               std::to_string(sender.total()) + " request bytes (" +
                               errno_words(error) + ")";
            }
        }
        if ((watched.revents & (POLLIN | POLLERR | POLLHUP)) == 0) continue;
        const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            return closed("reading the response failed (" + errno_words(errno) + ") after " +
                          std::to_string(parser.received_bytes()) + " response bytes");
        }
        const auto state =
            n == 0 ? parser.finish()
                   : parser.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
        switch (state) {
            case ResponseParser::State::done:
                return end(Outcome::response, "");
            case ResponseParser::State::malformed:
                return end(Outcome::malformed, "the response is malformed: " + parser.reason());
            case ResponseParser::State::tooLarge:
                return end(Outcome::tooLarge, "the response is too large: " + parser.reason());
            case ResponseParser::State::needMore:
                if (n == 0) return closed(parser.closed_sentence());
                if (watch && !parser.raw_head().empty() && watch(parser.response())) {
                    result.ended_by_watch = true;
                    return end(Outcome::response, "");
                }
                break;
        }
    }
}

}  // namespace

Exchange exchange(int fd, const Request &request, const std::string &host, milliseconds timeout,
                  const Limits &limits) {
    const auto start = Clock::now();
    check_request(request, host);
    return exchange_until(fd, request, host, start, timeout, limits, {}, -1);
}

Exchange exchange_tcp(const std::string &address, std::uint16_t port, const Request &request,
                      milliseconds timeout, const Limits &limits, const BodyWatch &watch,
                      int stop_fd) {
    const auto start = Clock::now();
    const auto deadline = start + timeout;
    const auto failed = [&](Outcome outcome, std::string sentence) {
        Exchange result;
        result.outcome = outcome;
        result.sentence = std::move(sentence);
        result.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
        return result;
    };
    const std::string where = address + " port " + std::to_string(port);
    check_request(request, "localhost");

    sockaddr_storage storage{};
    socklen_t length = 0;
    // A probe reaches the service through the runtime's loopback listener, never the network.
    if (!loopback(address, storage, length, port)) {
        return failed(Outcome::connectFailed,
                      "connecting to " + where + " refused: not a loopback IP address");
    }
    UniqueFd socket(::socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!socket) {
        return failed(Outcome::connectFailed,
                      "could not make a socket for " + where + ": " + errno_words(errno));
    }
    if (::connect(socket.get(), reinterpret_cast<const sockaddr *>(&storage), length) != 0) {
        if (errno != EINPROGRESS) {
            return failed(Outcome::connectFailed,
                          "could not connect to " + where + ": " + errno_words(errno));
        }
        while (true) {
            std::array<pollfd, 2> fds{{{socket.get(), POLLOUT, 0}, {stop_fd, POLLIN, 0}}};
            const int ready = ::poll(fds.data(), fds.size(), poll_milliseconds(deadline));
            if (ready < 0 && errno == EINTR) continue;
            if (ready > 0 && fds[0].revents == 0 && (fds[1].revents & POLLIN) != 0) {
                Exchange stopped = failed(
                    Outcome::closed, "the wait for the connection to " + where + " was stopped");
                stopped.stopped = true;
                return stopped;
            }
            if (ready == 0) {
                return failed(Outcome::timedOut, "the connection to " + where +
                                                     " was not accepted within " +
                                                     std::to_string(timeout.count()) + " ms");
            }
            if (ready < 0) {
                return failed(Outcome::connectFailed,
                              "could not connect to " + where + ": " + errno_words(errno));
            }
            break;
        }
        int error = 0;
        socklen_t error_length = sizeof error;
        if (::getsockopt(socket.get(), SOL_SOCKET, SO_ERROR, &error, &error_length) != 0) {
            error = errno;
        }
        if (error != 0) {
            return failed(Outcome::connectFailed,
                          "could not connect to " + where + ": " + errno_words(error));
        }
    }
    const std::string host = (storage.ss_family == AF_INET6 ? "[" + address + "]" : address) + ":" +
                             std::to_string(port);
    return exchange_until(socket.get(), request, host, start, timeout, limits, watch, stop_fd);
}

}  // namespace tea::http
