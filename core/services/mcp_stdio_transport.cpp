#include "services/mcp_stdio_transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <limits>
#include <system_error>
#include <utility>

#include "util/error.hpp"

namespace tea::services {
namespace {

constexpr std::size_t read_chunk_bytes = 64U << 10U;

int remaining_ms(McpClock::time_point deadline) {
    // Rounded up: poll waits at least this long, so a wait never ends before its deadline.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - McpClock::now());
    return static_cast<int>(
        std::clamp<std::int64_t>(left.count(), 0, std::numeric_limits<int>::max()));
}

// A write to a server that closed its stdin raises SIGPIPE, which would end the runtime unless
// ignored process-wide; it is blocked for this thread around the write instead, and a SIGPIPE
// the write raised is taken back before the mask is restored.
class SigpipeBlocked {
   public:
    SigpipeBlocked() {
        sigemptyset(&pipe_);
        sigaddset(&pipe_, SIGPIPE);
        sigset_t pending;
        sigpending(&pending);
        was_pending_ = sigismember(&pending, SIGPIPE) == 1;
        pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    }
    SigpipeBlocked(const SigpipeBlocked &) = delete;
    SigpipeBlocked &operator=(const SigpipeBlocked &) = delete;
    SigpipeBlocked(SigpipeBlocked &&) = delete;
    SigpipeBlocked &operator=(SigpipeBlocked &&) = delete;
    ~SigpipeBlocked() {
        if (raised_ && !was_pending_) {
            const timespec now{};
            while (sigtimedwait(&pipe_, nullptr, &now) == -1 && errno == EINTR) {
            }
        }
        pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }
    void raised() { raised_ = true; }

   private:
    sigset_t pipe_{};
    sigset_t old_{};
    bool was_pending_ = false;
    bool raised_ = false;
};

void make_non_blocking(const UniqueFd &fd, const char *which) {
    const int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
        throw runtime_failure(std::string{"tool server: cannot make "} + which +
                              " non-blocking: " + std::generic_category().message(errno));
    }
}

}  // namespace

McpStdioTransport::McpStdioTransport(UniqueFd to_server, UniqueFd from_server,
                                     const McpLimits &limits)
    : to_server_(std::move(to_server)), from_server_(std::move(from_server)), limits_(limits) {
    if (!to_server_ || !from_server_) {
        throw runtime_failure("tool server: the client needs both ends of the server's stdio");
    }
    make_non_blocking(to_server_, "the server's stdin");
    make_non_blocking(from_server_, "the server's stdout");
}

McpDelivery McpStdioTransport::send(const std::string &message, bool awaits_answer,
                                    std::string_view what, McpClock::time_point deadline,
                                    std::chrono::milliseconds timeout, const McpInbox &inbox) {
    if (closed_) {
        return {McpOutcome::closed, "the tool server had already closed its stdout"};
    }
    McpDelivery delivery;
    if (!write_line(message + "\n", deadline, delivery) || !awaits_answer) {
        return delivery;
    }
    for (std::string line;;) {
        const LineStatus status = read_line(line, deadline, inbox);
        if (status == LineStatus::timed_out) {
            return {McpOutcome::timed_out, "the tool server did not answer " + std::string{what} +
                                               " within " + std::to_string(timeout.count()) +
                                               " ms"};
        }
        if (status == LineStatus::closed) {
            return {McpOutcome::closed,
                    (was_stopped() ? "the call ended before the tool server answered "
                                   : "the tool server closed its stdout before answering ") +
                        std::string{what}};
        }
        if (inbox.message(line)) {
            return delivery;
        }
    }
}

void McpStdioTransport::answer_server(const std::string &message, McpClock::time_point deadline,
                                      const McpInbox &inbox) {
    static_cast<void>(inbox);
    McpDelivery ignored;
    write_line(message + "\n", deadline, ignored);
}

bool McpStdioTransport::write_line(const std::string &line, McpClock::time_point deadline,
                                   McpDelivery &failure) {
    SigpipeBlocked blocked;
    std::size_t written = 0;
    while (written < line.size()) {
        const ssize_t n = ::write(to_server_.get(), line.data() + written, line.size() - written);
        if (n > 0) {
            written += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && errno == EAGAIN) {
            // A server that reads nothing fills the pipe; the request's deadline bounds the wait.
            std::array<pollfd, 2> fds{
                {{to_server_.get(), POLLOUT, 0}, {stop_fd(), POLLIN, 0}}};  // poll skips fd -1
            const int ready = ::poll(fds.data(), fds.size(), remaining_ms(deadline));
            if (ready > 0 && fds[0].revents == 0 && (fds[1].revents & POLLIN) != 0) {
                stopped();
                closed_ = true;
                failure = {McpOutcome::closed,
                           "the call ended before the tool server read the request"};
                return false;
            }
            if (ready == 0) {
                failure = {McpOutcome::timed_out,
                           "the tool server did not read the request within its timeout (" +
                               std::to_string(written) + " of " + std::to_string(line.size()) +
                               " bytes written)"};
                return false;
            }
            if (ready > 0 || errno == EINTR) {
                continue;
            }
        }
        if (n < 0 && errno == EPIPE) {
            blocked.raised();
        }
        failure = {McpOutcome::closed,
                   "the tool server closed its stdin: " + std::generic_category().message(errno)};
        return false;
    }
    return true;
}

McpStdioTransport::LineStatus McpStdioTransport::read_line(std::string &line,
                                                           McpClock::time_point deadline,
                                                           const McpInbox &inbox) {
    for (;;) {
        const auto newline = buffer_.find('\n');
        if (skipping_) {
            // Over the cap: only the line's first bytes are kept for the record.
            skipped_ += newline == std::string::npos ? buffer_.size() : newline;
            if (newline == std::string::npos) {
                buffer_.clear();
            } else {
                buffer_.erase(0, newline + 1);
                skipping_ = false;
                inbox.event(McpPeerEventKind::line_too_long, skipped_head_, skipped_);
                continue;
            }
        } else if (newline != std::string::npos && newline <= limits_.max_line_bytes) {
            line.assign(buffer_, 0, newline);
            buffer_.erase(0, newline + 1);
            if (!line.empty() && line.back() == '\r') {
                line.pop_back();
            }
            return LineStatus::line;
        } else if (newline != std::string::npos || buffer_.size() > limits_.max_line_bytes) {
            // A server's line may not hold the client's memory past the cap, whatever it says.
            skipping_ = true;
            skipped_ = 0;
            skipped_head_ = buffer_.substr(0, limits_.record_bytes + 4);
            continue;
        }
        if (closed_) {
            if (skipping_) {
                skipping_ = false;
                inbox.event(McpPeerEventKind::line_too_long, skipped_head_, skipped_);
            }
            if (!buffer_.empty()) {
                // The last line, without its newline, is still the server's word.
                line = std::exchange(buffer_, {});
                return LineStatus::line;
            }
            return LineStatus::closed;
        }
        // Checked even while data keeps coming: a server that streams without end (one endless
        // line, or junk line after junk line) may not hold the caller past the deadline.
        if (McpClock::now() >= deadline) {
            return LineStatus::timed_out;
        }
        // A process that left the server's stdout open (a daemon it forked) cannot hold the
        // caller past the call's end.
        std::array<pollfd, 2> fds{{{from_server_.get(), POLLIN, 0}, {stop_fd(), POLLIN, 0}}};
        const int ready = ::poll(fds.data(), fds.size(), remaining_ms(deadline));
        if (ready == 0) {
            continue;
        }
        if (ready > 0 && fds[0].revents == 0 && (fds[1].revents & POLLIN) != 0) {
            stopped();
            closed_ = true;
            continue;
        }
        if (ready < 0) {
            if (errno == EINTR) {
                continue;
            }
            closed_ = true;
            continue;
        }
        std::array<char, read_chunk_bytes> chunk{};
        const ssize_t n = ::read(from_server_.get(), chunk.data(), chunk.size());
        if (n > 0) {
            buffer_.append(chunk.data(), static_cast<std::size_t>(n));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            closed_ = true;
        }
    }
}

}  // namespace tea::services
