#include "services/mcp_client.hpp"

#include <algorithm>
#include <utility>

#include "services/mcp_stdio_transport.hpp"
#include "util/error.hpp"
#include "util/wait_limit.hpp"

namespace tea::services {
namespace {

using nlohmann::json;

// The MCP revision whose transports and initialize handshake this client speaks.
constexpr std::string_view protocol_version = "2025-06-18";

// Whether arrays and objects in `text` nest deeper than `limit`, outside strings. Checked before
// parsing: a message of nested brackets within the size cap would otherwise be parsed and then
// walked recursively by whatever prints or compares it.
bool nests_deeper_than(std::string_view text, std::size_t limit) {
    std::size_t depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (const char c : text) {
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

std::string serialised(const json &message) {
    return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

McpClient::McpClient(UniqueFd to_server, UniqueFd from_server, McpLimits limits)
    : McpClient(
          std::make_unique<McpStdioTransport>(std::move(to_server), std::move(from_server), limits),
          limits) {}

McpClient::McpClient(std::unique_ptr<McpTransport> transport, McpLimits limits)
    : transport_(std::move(transport)), limits_(limits) {
    if (!transport_) {
        throw runtime_failure("tool server: the client needs a transport");
    }
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
    const auto deadline = McpClock::now() + std::chrono::milliseconds{std::clamp<std::int64_t>(
                                                timeout.count(), 0, max_wait_ms)};
    McpReply reply = request("initialize",
                             {{"protocolVersion", protocol_version},
                              {"capabilities", json::object()},
                              {"clientInfo", {{"name", "tea-evaluate"}, {"version", "0"}}}},
                             timeout);
    if (reply.outcome != McpOutcome::result) {
        return reply;
    }
    const json agreed =
        reply.value.is_object() ? reply.value.value("protocolVersion", json{}) : json{};
    transport_->opened(agreed.is_string() ? agreed.get<std::string>()
                                          : std::string{protocol_version});
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - McpClock::now());
    McpReply sent = notify("notifications/initialized", nullptr, std::max(left, {}));
    return sent.outcome == McpOutcome::result ? reply : sent;
}

McpReply McpClient::exchange(std::string_view method, const json &params, bool with_id,
                             std::chrono::milliseconds timeout) {
    const auto start = McpClock::now();
    const auto deadline = start + std::chrono::milliseconds{
                                      std::clamp<std::int64_t>(timeout.count(), 0, max_wait_ms)};
    McpExchange record;
    record.transport = transport_->name();
    record.method = method;
    json message{{"jsonrpc", "2.0"}, {"method", method}};
    if (with_id) {
        record.id = next_id_++;
        message["id"] = record.id;
    }
    if (!params.is_null()) {
        message["params"] = params;
    }
    const std::string text = serialised(message);
    std::tie(record.request, record.request_cut) = cut_for_record(text, limits_.record_bytes);

    json answer;
    bool answered = false;
    McpInbox inbox;
    inbox.event = [this](McpPeerEventKind kind, std::string_view said, std::size_t bytes) {
        record_event(kind, said, bytes);
    };
    inbox.message = [&](const std::string &said) {
        // Once answered, a repeat of the answer is a message to an id no longer awaited.
        if (!is_answer(said, answered ? 0 : record.id, deadline, inbox, answer)) {
            return false;
        }
        answered = true;
        std::tie(record.response, record.response_cut) = cut_for_record(said, limits_.record_bytes);
        return true;
    };
    const std::string what = with_id
                                 ? std::string{method} + " (id " + std::to_string(record.id) + ")"
                                 : std::string{method};
    const McpDelivery delivery = transport_->send(text, with_id, what, deadline, timeout, inbox);

    McpReply reply{delivery.outcome, nullptr, delivery.detail};
    if (delivery.outcome == McpOutcome::result && answered) {
        if (answer.contains("error")) {
            reply = {McpOutcome::error_object, std::move(answer["error"]),
                     "the tool server answered " + std::string{method} + " with an error"};
        } else {
            reply = {McpOutcome::result, std::move(answer["result"]), ""};
        }
    }
    record.outcome = reply.outcome;
    record.detail = reply.detail;
    record.http_status = delivery.http_status;
    record.elapsed_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(McpClock::now() - start).count();
    exchanges_.push_back(std::move(record));
    return reply;
}

bool McpClient::is_answer(const std::string &text, std::int64_t id, McpClock::time_point deadline,
                          const McpInbox &inbox, json &message) {
    if (nests_deeper_than(text, limits_.max_depth)) {
        record_event(McpPeerEventKind::not_json, text, text.size());
        return false;
    }
    json parsed = json::parse(text, nullptr, false);
    if (parsed.is_discarded()) {
        record_event(McpPeerEventKind::not_json, text, text.size());
        return false;
    }
    if (!parsed.is_object() || parsed.value("jsonrpc", json{}) != "2.0") {
        record_event(McpPeerEventKind::not_jsonrpc, text, text.size());
        return false;
    }
    if (parsed.contains("method")) {
        record_event(McpPeerEventKind::server_message, text, text.size());
        if (parsed.contains("id")) {
            // A server that waits on its own request (a ping, roots/list) is told this client
            // offers none, rather than left hanging until our request times out.
            const json refusal{{"jsonrpc", "2.0"},
                               {"id", parsed["id"]},
                               {"error", {{"code", -32601}, {"message", "method not found"}}}};
            transport_->answer_server(serialised(refusal), deadline, inbox);
        }
        return false;
    }
    if (parsed.contains("result") == parsed.contains("error") || !parsed.contains("id")) {
        record_event(McpPeerEventKind::not_jsonrpc, text, text.size());
        return false;
    }
    const json &answered = parsed["id"];
    if (id <= 0 || !answered.is_number_unsigned() ||
        answered.get<std::uint64_t>() != static_cast<std::uint64_t>(id)) {
        record_event(McpPeerEventKind::unknown_id, text, text.size());
        return false;
    }
    message = std::move(parsed);
    return true;
}

void McpClient::record_event(McpPeerEventKind kind, std::string_view text, std::size_t bytes) {
    // A server that floods junk may not grow the records without bound: past the cap, only
    // counted.
    if (peer_events_.size() >= limits_.max_peer_events) {
        ++peer_events_dropped_;
        return;
    }
    McpPeerEvent event{kind, {}, false, bytes};
    std::tie(event.line, event.line_cut) = cut_for_record(text, limits_.record_bytes);
    event.line_cut = event.line_cut || bytes > event.line.size();
    peer_events_.push_back(std::move(event));
}

}  // namespace tea::services
