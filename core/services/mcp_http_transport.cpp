#include "services/mcp_http_transport.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "http/http_client.hpp"
#include "http/http_syntax.hpp"
#include "services/sse_events.hpp"

namespace tea::services {
namespace {

constexpr std::string_view json_type = "application/json";
constexpr std::string_view event_stream_type = "text/event-stream";
// A session id is echoed in every later request's head: a long one would let the server grow it.
constexpr std::size_t max_session_id_bytes = 1024;
constexpr std::size_t max_protocol_version_bytes = 64;

std::chrono::milliseconds left_until(McpClock::time_point deadline) {
    return std::max(std::chrono::ceil<std::chrono::milliseconds>(deadline - McpClock::now()),
                    std::chrono::milliseconds{0});
}

const http::Header *find_header(const http::Response &response, std::string_view lowercase_name) {
    const auto it = std::find_if(
        response.headers.begin(), response.headers.end(),
        [&](const http::Header &header) { return http::lowercase(header.name) == lowercase_name; });
    return it == response.headers.end() ? nullptr : &*it;
}

// The media type of Content-Type, without parameters, lowercased ("" when there is none).
std::string media_type(const http::Response &response) {
    const http::Header *type = find_header(response, "content-type");
    if (type == nullptr) {
        return "";
    }
    std::string_view value = type->value;
    value = value.substr(0, value.find(';'));
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) {
        value.remove_suffix(1);
    }
    return http::lowercase(value);
}

// Whether a server's word (its session id, the revision it agreed to) may go into the runtime's
// own request head: visible ASCII only, so it can neither end a header nor start another.
bool visible_ascii(std::string_view text, std::size_t max_bytes) {
    return !text.empty() && text.size() <= max_bytes &&
           std::all_of(text.begin(), text.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

// A response the transport does not take, kept as a peer event: the reason, the head, the body.
void refuse_response(const McpInbox &inbox, const http::Exchange &exchange,
                     const std::string &reason) {
    const std::string said = reason + "\n" + exchange.raw_head + exchange.response.body;
    inbox.event(McpPeerEventKind::bad_response, said, said.size());
}

std::string status_words(int status) {
    return "HTTP " + std::to_string(status);
}

}  // namespace

McpHttpTransport::McpHttpTransport(McpHttpEndpoint endpoint, http::Limits limits)
    : endpoint_(std::move(endpoint)), limits_(limits) {
    if (const auto problem = http::invalid_target(endpoint_.path)) {
        throw std::invalid_argument("tool server endpoint refused: " + *problem);
    }
}

http::Exchange McpHttpTransport::post(const std::string &message, McpClock::time_point deadline,
                                      const http::BodyWatch &watch) const {
    try {
        return http::exchange_tcp(endpoint_.address, endpoint_.port, request_for(message),
                                  left_until(deadline), limits_, watch, stop_fd());
    } catch (const std::invalid_argument &refused) {
        // Only the runtime's own words reach the request's head, each checked: not reached.
        http::Exchange unsent;
        unsent.outcome = http::Outcome::connectFailed;
        unsent.sentence = refused.what();
        return unsent;
    }
}

http::Request McpHttpTransport::request_for(const std::string &message) const {
    http::Request request{"POST", endpoint_.path, {}, message};
    request.headers.push_back(
        {"Accept", std::string{json_type} + ", " + std::string{event_stream_type}});
    request.headers.push_back({"Content-Type", std::string{json_type}});
    if (!session_id_.empty()) {
        request.headers.push_back({"Mcp-Session-Id", session_id_});
    }
    if (!protocol_version_.empty()) {
        request.headers.push_back({"MCP-Protocol-Version", protocol_version_});
    }
    return request;
}

void McpHttpTransport::opened(std::string_view protocol_version) {
    if (visible_ascii(protocol_version, max_protocol_version_bytes)) {
        protocol_version_ = protocol_version;
    }
}

void McpHttpTransport::take_session(const http::Response &response, const McpInbox &inbox) {
    if (!session_id_.empty() || session_refused_) {
        return;
    }
    const http::Header *session = find_header(response, "mcp-session-id");
    if (session == nullptr) {
        return;
    }
    // Sent back in every later request: a byte outside visible ASCII would let the server write
    // into the runtime's own request head.
    if (!visible_ascii(session->value, max_session_id_bytes)) {
        session_refused_ = true;
        const std::string said = "a session id outside visible ASCII or over " +
                                 std::to_string(max_session_id_bytes) + " bytes: " + session->value;
        inbox.event(McpPeerEventKind::bad_response, said, said.size());
        return;
    }
    session_id_ = session->value;
}

McpDelivery McpHttpTransport::send(const std::string &message, bool awaits_answer,
                                   std::string_view what, McpClock::time_point deadline,
                                   std::chrono::milliseconds timeout, const McpInbox &inbox) {
    if (was_stopped()) {
        return {McpOutcome::closed, "the call had already ended"};
    }
    bool answered = false;
    int status_seen = 0;
    std::size_t fed = 0;
    SseEvents events{
        [&](const std::string &data) { answered = inbox.message(data) || answered; },
        [&](std::string_view line) { inbox.event(McpPeerEventKind::not_json, line, line.size()); }};
    // An event stream may stay open after the answer (the server SHOULD close it, need not): it
    // is read as it comes and left once the answer is in.
    const auto watch = [&](const http::Response &so_far) {
        status_seen = so_far.status;
        if (!awaits_answer || so_far.status != 200 || media_type(so_far) != event_stream_type) {
            return false;
        }
        events.feed(std::string_view{so_far.body}.substr(fed));
        fed = so_far.body.size();
        return answered;
    };
    const http::Exchange exchange = post(message, deadline, watch);
    const std::string request = std::string{what};
    // A process the server left listening on the port cannot hold the caller past the call's end.
    if (exchange.stopped) {
        stopped();
        return {McpOutcome::closed,
                "the call ended before the tool server answered " + request + " (" +
                    exchange.sentence + ")",
                status_seen};
    }
    switch (exchange.outcome) {
        case http::Outcome::timedOut:
            return {McpOutcome::timed_out,
                    "the tool server did not answer " + request + " within " +
                        std::to_string(timeout.count()) + " ms (" + exchange.sentence + ")",
                    status_seen};
        case http::Outcome::connectFailed:
            return {McpOutcome::closed, "the tool server's endpoint was not reached for " +
                                            request + ": " + exchange.sentence};
        case http::Outcome::closed:
            return {McpOutcome::closed,
                    "the tool server ended the HTTP exchange of " + request +
                        " before answering: " + exchange.sentence,
                    status_seen};
        case http::Outcome::malformed:
        case http::Outcome::tooLarge: {
            const std::string said = exchange.sentence + "\n" + exchange.raw_head;
            inbox.event(McpPeerEventKind::not_http, said, said.size());
            return {McpOutcome::closed,
                    "the tool server's answer to " + request +
                        " is no HTTP response the client takes: " + exchange.sentence,
                    status_seen};
        }
        case http::Outcome::response:
            break;
    }
    const http::Response &response = exchange.response;
    const int status = response.status;
    if (status == 200 || status == 202) {
        take_session(response, inbox);
    }
    if (!awaits_answer) {
        if (status == 202) {
            return {McpOutcome::result, "", status};
        }
        refuse_response(inbox, exchange,
                        status_words(status) + " to a notification, which takes 202 Accepted");
        return {McpOutcome::closed,
                "the tool server answered " + request + " with " + status_words(status) +
                    ", not 202 Accepted",
                status};
    }
    const std::string type = media_type(response);
    if (status == 200 && type == json_type) {
        answered = inbox.message(response.body);
    } else if (status == 200 && type == event_stream_type) {
        if (!exchange.ended_by_watch) {
            events.feed(std::string_view{response.body}.substr(fed));
            events.finish();
        }
    } else {
        const std::string reason =
            status == 200 ? "a Content-Type of \"" + type + "\", neither " +
                                std::string{json_type} + " nor " + std::string{event_stream_type}
                          : status_words(status) + " to a request, which takes 200 and its answer";
        refuse_response(inbox, exchange, reason);
        return {McpOutcome::closed, "the tool server answered " + request + " with " + reason,
                status};
    }
    if (answered) {
        return {McpOutcome::result, "", status};
    }
    return {McpOutcome::closed,
            "the tool server's HTTP answer to " + request + " held no answer to its id", status};
}

void McpHttpTransport::answer_server(const std::string &message, McpClock::time_point deadline,
                                     const McpInbox &inbox) {
    const http::Exchange exchange = post(message, deadline, {});
    if (exchange.stopped) {
        stopped();
        return;
    }
    if (exchange.outcome != http::Outcome::response || exchange.response.status != 202) {
        const std::string reason =
            exchange.outcome == http::Outcome::response
                ? status_words(exchange.response.status) +
                      " to the client's answer to the server's request, which takes 202 Accepted"
                : "the client's answer to the server's request was not delivered: " +
                      exchange.sentence;
        refuse_response(inbox, exchange, reason);
    }
}

}  // namespace tea::services
