// The names and records of mcp_types.hpp: what a trial's call record keeps of a conversation.
#include "services/mcp_types.hpp"

namespace tea::services {

using nlohmann::json;

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
        case McpPeerEventKind::not_http:
            return "notHttp";
        case McpPeerEventKind::bad_response:
            return "badResponse";
    }
    return "unknown";
}

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

json exchange_record(const McpExchange &exchange) {
    // The shape every protocol's exchange shares in a call record (docs/records.md).
    return {{"protocol", "mcp"},
            {"transport", exchange.transport},
            {"method", exchange.method},
            {"id", exchange.id != 0 ? json(exchange.id) : json(nullptr)},
            {"request", exchange.request},
            {"requestCut", exchange.request_cut},
            {"response", exchange.response},
            {"responseCut", exchange.response_cut},
            {"outcome", outcome_name(exchange.outcome)},
            {"sentence", exchange.detail},
            {"status", exchange.http_status != 0 ? json(exchange.http_status) : json(nullptr)},
            {"ms", exchange.elapsed_ms}};
}

json peer_event_record(const McpPeerEvent &event) {
    return {{"kind", peer_event_name(event.kind)},
            {"line", event.line},
            {"lineCut", event.line_cut},
            {"lineBytes", event.line_bytes}};
}

}  // namespace tea::services
