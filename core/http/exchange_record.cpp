// The record of one HTTP exchange in a call record (http_client.hpp, exchange_record).
#include <string_view>

#include "http/http_client.hpp"

namespace tea::http {
namespace {

// At most `cap` bytes of `bytes`, not ending inside a UTF-8 sequence, so that a record cut in
// the middle of a character does not turn a valid text into an invalid one.
std::string_view cut_at_utf8_boundary(std::string_view bytes, std::size_t cap) {
    if (bytes.size() <= cap) return bytes;
    std::size_t end = cap;
    for (std::size_t back = 0; back < 3 && end > 0; ++back) {
        const auto byte = static_cast<unsigned char>(bytes[end]);
        if ((byte & 0xC0) != 0x80) break;  // not a continuation byte: a character starts here
        --end;
    }
    if ((static_cast<unsigned char>(bytes[end]) & 0xC0) == 0x80) end = cap;  // not UTF-8 anyway
    return bytes.substr(0, end);
}

}  // namespace

nlohmann::json exchange_record(const Request &request, const Exchange &exchange) {
    const bool answered = exchange.outcome == Outcome::response;
    const std::string_view request_head =
        cut_at_utf8_boundary(exchange.request_head, kRecordCutBytes);
    const std::string_view request_body = cut_at_utf8_boundary(request.body, kRecordCutBytes);
    const std::string_view response_head = cut_at_utf8_boundary(exchange.raw_head, kRecordCutBytes);
    const std::string_view response_body =
        cut_at_utf8_boundary(exchange.response.body, kRecordCutBytes);
    nlohmann::json record = {
        {"protocol", "http"},
        {"method", request.method},
        {"path", request.target},
        {"status", answered ? nlohmann::json(exchange.response.status) : nlohmann::json(nullptr)},
        {"requestHead", request_head},
        {"requestBody", request_body},
        {"requestCut", request_head.size() < exchange.request_head.size() ||
                           request_body.size() < request.body.size()},
        {"requestBytes", exchange.request_head.size() + request.body.size()},
        {"responseHead", response_head},
        {"responseBody", response_body},
        {"responseCut", response_head.size() < exchange.raw_head.size() ||
                            response_body.size() < exchange.response.body.size()},
        {"responseBytes", exchange.raw_head.size() + exchange.response.body.size()},
        {"outcome", to_string(exchange.outcome)},
        {"sentence", answered ? nlohmann::json(nullptr) : nlohmann::json(exchange.sentence)},
        {"ms", exchange.elapsed.count()},
    };
    return record;
}

}  // namespace tea::http
