#include "services/mcp_client.hpp"

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
#include "util/wait_limit.hpp"

namespace tea::services {
namespace {

using nlohmann::json;

// The MCP revision whose stdio transport and initialize handshake this client speaks.
constexpr std::string_view protocol_version = "2025-06-18";
constexpr std::size_t read_chunk_bytes = 64U << 10U;

// The first `limit` bytes of `text`, backed off to a UTF-8 character boundary so a record never
// holds half a character; and whether anything was cut.
std::pair<std::string, bool> cut_for_record(std::string_view text, std::size_t limit) {
    if (text.size() <= limit) {
        return {std::string{text}, false};
    }
    std::size_t end = limit;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0U) == 0x80U) {
        --end;
    }
    return {std::string{text.substr(0, end)}, true};
}

// Whether arrays and objects in `line` nest deeper than `limit`, outside strings. Checked before
// parsing: a line of nested brackets within the line cap would otherwise be parsed and then
// walked recursively by whatever prints or compares it.
bool nests_deeper_than(std::string_view line, std::size_t limit) {
    std::size_t depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (const char c : line) {
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limit) {
                return true;
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return false;
}

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
    // Rounded up: poll waits at least this long, so a wait never ends before its deadline.
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
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

std::string_view outcome_name(McpOutcome outcome) {
    switch (outcome) {
        case McpOutcome::result:
            return "result";
        case McpOutcome::error_object:
            return "error";
        case McpOutcome::timed_out:
            return "timedOut";
        case McpOutcome::closed:
            return "closed";
    }
    return "unknown";
}

std::string_view peer_event_name(McpPeerEventKind kind) {
    switch (kind) {
        case McpPeerEventKind::not_json:
            return "notJson";
        case McpPeerEventKind::not_jsonrpc:
            return "notJsonRpc";
        case McpPeerEventKind::unknown_id:
            return "unknownId";
        case McpPeerEventKind::line_too_long:
            return "lineTooLong";
        case McpPeerEventKind::server_message:
            return "serverMessage";
    }
    return "unknown";
}

json exchange_record(const McpExchange &exchange) {
    // The shape every protocol's exchange shares in a call record (docs/records.md).
    return {{"protocol", "mcp"},
            {"method", exchange.method},
            {"id", exchange.id != 0 ? json(exchange.id) : json(nullptr)},
            {"request", exchange.request},
            {"requestCut", exchange.request_cut},
            {"response", exchange.response},
            {"responseCut", exchange.response_cut},
            {"outcome", outcome_name(exchange.outcome)},
            {"sentence", exchange.detail},
            {"ms", exchange.elapsed_ms}};
}

json peer_event_record(const McpPeerEvent &event) {
    return {{"kind", peer_event_name(event.kind)},
            {"line", event.line},
            {"lineCut", event.line_cut},
            {"lineBytes", event.line_bytes}};
}

McpClient::McpClient(UniqueFd to_server, UniqueFd from_server, McpLimits limits)
    : to_server_(std::move(to_server)), from_server_(std::move(from_server)), limits_(limits) {
    if (!to_server_ || !from_server_) {
        throw runtime_failure("tool server: the client needs both ends of the server's stdio");
    }
    make_non_blocking(to_server_, "the server's stdin");
    make_non_blocking(from_server_, "the server's stdout");
}

McpReply McpClient::request(std::string_view method, const json &params,
                            std::chrono::milliseconds timeout) {
    return exchange(method, params, true, timeout);
}

McpReply McpClient::notify(std::string_view method, const json &params,
                           std::chrono::milliseconds timeout) {
    return exchange(method, params, false, timeout);
}

McpReply McpClient::initialize(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + std::chrono::milliseconds{std::clamp<std::int64_t>(
                                             timeout.count(), 0, max_wait_ms)};
    McpReply reply = request("initialize",
                             {{"protocolVersion", protocol_version},
                              {"capabilities", json::object()},
                              {"clientInfo", {{"name", "tea-evaluate"}, {"version", "0"}}}},
                             timeout);
    if (reply.outcome != McpOutcome::result) {
        return reply;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    McpReply sent = notify("notifications/initialized", nullptr, std::max(left, {}));
    return sent.outcome == McpOutcome::result ? reply : sent;
}

McpReply McpClient::exchange(std::string_view method, const json &params, bool with_id,
                             std::chrono::milliseconds timeout) {
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::milliseconds{
                                      std::clamp<std::int64_t>(timeout.count(), 0, max_wait_ms)};
    McpExchange record;
    record.method = method;
    json message{{"jsonrpc", "2.0"}, {"method", method}};
    if (with_id) {
        record.id = next_id_++;
        message["id"] = record.id;
    }
    if (!params.is_null()) {
        message["params"] = params;
    }
    const std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::tie(record.request, record.request_cut) =
        cut_for_record(std::string_view{line}.substr(0, line.size() - 1), limits_.record_bytes);

    McpReply reply{McpOutcome::result, nullptr, ""};
    if (closed_) {
        reply = {McpOutcome::closed, nullptr, "the tool server had already closed its stdout"};
    } else if (write_line(line, deadline, reply)) {
        if (!with_id) {
            reply = {McpOutcome::result, nullptr, ""};
        }
        for (std::string answer; with_id;) {
            const LineStatus status = read_line(answer, deadline);
            if (status == LineStatus::timed_out) {
                reply = {McpOutcome::timed_out, nullptr,
                         "the tool server did not answer " + std::string{method} + " (id " +
                             std::to_string(record.id) + ") within " +
                             std::to_string(timeout.count()) + " ms"};
                break;
            }
            if (status == LineStatus::closed) {
                reply = {McpOutcome::closed, nullptr,
                         (stopped_ ? "the call ended before the tool server answered "
                                   : "the tool server closed its stdout before answering ") +
                             std::string{method} + " (id " + std::to_string(record.id) + ")"};
                break;
            }
            json parsed;
            if (is_answer(answer, record.id, deadline, parsed)) {
                std::tie(record.response, record.response_cut) =
                    cut_for_record(answer, limits_.record_bytes);
                if (parsed.contains("error")) {
                    reply = {McpOutcome::error_object, std::move(parsed["error"]),
                             "the tool server answered " + std::string{method} + " with an error"};
                } else {
                    reply = {McpOutcome::result, std::move(parsed["result"]), ""};
                }
                break;
            }
        }
    }
    record.outcome = reply.outcome;
    record.detail = reply.detail;
    record.elapsed_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    exchanges_.push_back(std::move(record));
    return reply;
}

bool McpClient::write_line(const std::string &line, Clock::time_point deadline, McpReply &failure) {
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
                {{to_server_.get(), POLLOUT, 0}, {stop_fd_, POLLIN, 0}}};  // poll skips fd -1
            const int ready = ::poll(fds.data(), fds.size(), remaining_ms(deadline));
            if (ready > 0 && fds[0].revents == 0 && (fds[1].revents & POLLIN) != 0) {
                stopped_ = closed_ = true;
                failure = {McpOutcome::closed, nullptr,
                           "the call ended before the tool server read the request"};
                return false;
            }
            if (ready == 0) {
                failure = {McpOutcome::timed_out, nullptr,
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
        failure = {McpOutcome::closed, nullptr,
                   "the tool server closed its stdin: " + std::generic_category().message(errno)};
        return false;
    }
    return true;
}

McpClient::LineStatus McpClient::read_line(std::string &line, Clock::time_point deadline) {
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
                record_event(McpPeerEventKind::line_too_long, skipped_head_, skipped_);
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
                record_event(McpPeerEventKind::line_too_long, skipped_head_, skipped_);
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
        if (Clock::now() >= deadline) {
            return LineStatus::timed_out;
        }
        // A process that left the server's stdout open (a daemon it forked) cannot hold the
        // caller past the call's end.
        std::array<pollfd, 2> fds{{{from_server_.get(), POLLIN, 0}, {stop_fd_, POLLIN, 0}}};
        const int ready = ::poll(fds.data(), fds.size(), remaining_ms(deadline));
        if (ready == 0) {
            continue;
        }
        if (ready > 0 && fds[0].revents == 0 && (fds[1].revents & POLLIN) != 0) {
            stopped_ = closed_ = true;
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

bool McpClient::is_answer(const std::string &line, std::int64_t id, Clock::time_point deadline,
                          json &message) {
    if (nests_deeper_than(line, limits_.max_depth)) {
        record_event(McpPeerEventKind::not_json, line, line.size());
        return false;
    }
    json parsed = json::parse(line, nullptr, false);
    if (parsed.is_discarded()) {
        record_event(McpPeerEventKind::not_json, line, line.size());
        return false;
    }
    if (!parsed.is_object() || parsed.value("jsonrpc", json{}) != "2.0") {
        record_event(McpPeerEventKind::not_jsonrpc, line, line.size());
        return false;
    }
    if (parsed.contains("method")) {
        record_event(McpPeerEventKind::server_message, line, line.size());
        if (parsed.contains("id")) {
            // A server that waits on its own request (a ping, roots/list) is told this client
            // offers none, rather than left hanging until our request times out.
            const json refusal{{"jsonrpc", "2.0"},
                               {"id", parsed["id"]},
                               {"error", {{"code", -32601}, {"message", "method not found"}}}};
            McpReply ignored{McpOutcome::result, nullptr, ""};
            write_line(refusal.dump(-1, ' ', false, json::error_handler_t::replace) + "\n",
                       deadline, ignored);
        }
        return false;
    }
    if (parsed.contains("result") == parsed.contains("error") || !parsed.contains("id")) {
        record_event(McpPeerEventKind::not_jsonrpc, line, line.size());
        return false;
    }
    const json &answered = parsed["id"];
    if (!answered.is_number_unsigned() ||
        answered.get<std::uint64_t>() != static_cast<std::uint64_t>(id)) {
        record_event(McpPeerEventKind::unknown_id, line, line.size());
        return false;
    }
    message = std::move(parsed);
    return true;
}

void McpClient::record_event(McpPeerEventKind kind, std::string_view line, std::size_t line_bytes) {
    // A server that floods junk may not grow the records without bound: past the cap, only
    // counted.
    if (peer_events_.size() >= limits_.max_peer_events) {
        ++peer_events_dropped_;
        return;
    }
    McpPeerEvent event{kind, {}, false, line_bytes};
    std::tie(event.line, event.line_cut) = cut_for_record(line, limits_.record_bytes);
    event.line_cut = event.line_cut || line_bytes > event.line.size();
    peer_events_.push_back(std::move(event));
}

}  // namespace tea::services
