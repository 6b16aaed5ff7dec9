#include "http/http_response_parser.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "http/http_syntax.hpp"

namespace tea::http {
namespace {

// A chunk-size line carries a size and extensions the client ignores; more than this is a
// service trying to make the runtime hold an endless line.
constexpr std::size_t kChunkLineBytes = 4096;

// Field content and reason phrases: HTAB, SP, visible ASCII and obs-text; no other control.
bool is_field_byte(unsigned char c) {
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

bool is_space(char c) {
    return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

bool name_is(const Header &header, std::string_view lowercase_name) {
    return lowercase(header.name) == lowercase_name;
}

// A header (or trailer) line into `out`, or why it is refused.
std::optional<std::string> parse_field_line(std::string_view line, Header &out) {
    // A folded line would let the record show one value while a lenient reader sees another.
    if (!line.empty() && is_space(line.front())) {
        return "a folded header line (obs-fold), which HTTP/1.1 forbids";
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return "a header line without a colon";
    const std::string_view name = line.substr(0, colon);
    if (!is_token(name)) return "a header name that is not a token";
    const std::string_view value = trim(line.substr(colon + 1));
    for (const char c : value) {
        if (!is_field_byte(static_cast<unsigned char>(c))) {
            return "a control byte in the value of header " + std::string(name);
        }
    }
    out = Header{std::string(name), std::string(value)};
    return std::nullopt;
}

// A Content-Length value: 1*DIGIT, without overflow.
std::optional<std::uint64_t> parse_decimal(std::string_view text) {
    if (text.empty()) return std::nullopt;
    std::uint64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    return value;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::vector<std::string_view> list_elements(std::string_view value) {
    std::vector<std::string_view> elements;
    std::size_t start = 0;
    while (true) {
        const auto comma = value.find(',', start);
        elements.push_back(trim(value.substr(start, comma - start)));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return elements;
}

}  // namespace

std::string to_string(ResponseParser::State state) {
    switch (state) {
        case ResponseParser::State::needMore:
            return "needMore";
        case ResponseParser::State::done:
            return "done";
        case ResponseParser::State::malformed:
            return "malformed";
        case ResponseParser::State::tooLarge:
            return "tooLarge";
    }
    return "unknown";
}

ResponseParser::ResponseParser(const Limits &limits, bool head_request)
    : limits_(limits), head_request_(head_request) {}

ResponseParser::State ResponseParser::refuse(std::string reason) {
    reason_ = std::move(reason);
    state_ = State::malformed;
    return state_;
}

ResponseParser::State ResponseParser::too_large(std::string reason) {
    reason_ = std::move(reason);
    state_ = State::tooLarge;
    return state_;
}

ResponseParser::State ResponseParser::feed(std::string_view bytes) {
    if (state_ != State::needMore) return state_;
    received_ += bytes.size();
    while (!bytes.empty() && state_ == State::needMore) {
        switch (phase_) {
            case Phase::head:
                feed_head(bytes);
                break;
            case Phase::fixedBody:
                feed_fixed(bytes);
                break;
            case Phase::chunkSize:
                if (feed_line(bytes, kChunkLineBytes, "chunk-size line") == State::done) {
                    chunk_size_line();
                }
                break;
            case Phase::chunkData:
                feed_chunk_data(bytes);
                break;
            case Phase::chunkDataEnd: {
                // Chunk data is followed by exactly CRLF; anything else means the size lied.
                const char expected = pending_.empty() ? '\r' : '\n';
                if (bytes.front() != expected) {
                    return refuse(
                        "chunk data not followed by CRLF (the chunk size does not match)");
                }
                bytes.remove_prefix(1);
                if (expected == '\r') {
                    pending_ = "\r";
                } else {
                    pending_.clear();
                    phase_ = Phase::chunkSize;
                }
                break;
            }
            case Phase::trailers: {
                const std::size_t budget = limits_.head_bytes > head_bytes_used_
                                               ? limits_.head_bytes - head_bytes_used_
                                               : 0;
                if (feed_line(bytes, budget, "trailer section") == State::done) trailer_line();
                break;
            }
            case Phase::untilClose:
                append_body(bytes);
                bytes = {};
                break;
        }
    }
    return state_;
}

ResponseParser::State ResponseParser::finish() {
    if (state_ == State::needMore && phase_ == Phase::untilClose) state_ = State::done;
    return state_;
}

std::string ResponseParser::closed_sentence() const {
    const std::string body_bytes = std::to_string(response_.body.size());
    switch (phase_) {
        case Phase::head:
            if (received_ == 0) return "the service closed the connection without answering";
            return "the service closed the connection after " + std::to_string(pending_.size()) +
                   " bytes of a response head, before its end";
        case Phase::fixedBody:
            return "the service closed the connection after " + body_bytes + " of the " +
                   std::to_string(announced_) + " body bytes its Content-Length announced";
        case Phase::chunkSize:
        case Phase::chunkData:
        case Phase::chunkDataEnd:
            return "the service closed the connection in its chunked body, after " + body_bytes +
                   " bytes of it, before the last chunk";
        case Phase::trailers:
            return "the service closed the connection in the trailers after the last chunk (" +
                   body_bytes + " body bytes read)";
        case Phase::untilClose:
            break;
    }
    return "the service closed the connection";
}

ResponseParser::State ResponseParser::feed_line(std::string_view &bytes, std::size_t cap,
                                                const char *what) {
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        const char c = bytes[i];
        const char previous = pending_.empty() ? '\0' : pending_.back();
        if (pending_.size() >= cap) {
            return refuse(std::string("a ") + what + " longer than " + std::to_string(cap) +
                          " bytes");
        }
        // A NUL or a lone CR or LF is read differently by different parsers (smuggling).
        if (c == '\0') return refuse(std::string("a NUL byte in the ") + what);
        if (previous == '\r' && c != '\n') {
            return refuse(std::string("a carriage return without a line feed in the ") + what);
        }
        if (c == '\n' && previous != '\r') {
            return refuse(std::string("a line feed without a carriage return in the ") + what);
        }
        pending_.push_back(c);
        if (c == '\n') {
            bytes.remove_prefix(i + 1);
            return State::done;
        }
    }
    bytes = {};
    return State::needMore;
}

ResponseParser::State ResponseParser::feed_head(std::string_view &bytes) {
    const std::size_t budget =
        limits_.head_bytes > head_bytes_used_ ? limits_.head_bytes - head_bytes_used_ : 0;
    while (!bytes.empty()) {
        // The head is read line by line into pending_, which keeps every line of it.
        if (feed_line(bytes, budget, "response head") != State::done) {
            if (state_ == State::malformed && pending_.size() >= budget) {
                reason_ = "a response head longer than the limit of " +
                          std::to_string(limits_.head_bytes) + " bytes";
            }
            return state_;
        }
        if (pending_ == "\r\n") return refuse("an empty line where the status line belongs");
        if (pending_.ends_with("\r\n\r\n")) return parse_head();
    }
    return state_;
}

ResponseParser::State ResponseParser::parse_head() {
    head_bytes_used_ += pending_.size();
    std::vector<std::string_view> lines;
    {
        std::string_view rest(pending_);
        while (!rest.empty()) {
            const auto end = rest.find("\r\n");
            lines.push_back(rest.substr(0, end));
            rest.remove_prefix(end + 2);
        }
        lines.pop_back();  // the blank line that ends the head
    }

    const std::string_view status_line = lines.front();
    if (!status_line.starts_with("HTTP/")) return refuse("a status line that does not start HTTP/");
    if (!status_line.starts_with("HTTP/1.1 ") && !status_line.starts_with("HTTP/1.0 ")) {
        return refuse("a response version other than HTTP/1.1 or HTTP/1.0");
    }
    const std::string_view after_version = status_line.substr(9);
    const std::string_view code = after_version.substr(0, 3);
    if (code.size() != 3 ||
        !std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        (after_version.size() > 3 && after_version[3] != ' ')) {
        return refuse("a status code that is not three digits");
    }
    const int status = (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
    if (status < 100 || status > 599) {
        return refuse("status " + std::string(code) + ", outside 100 to 599");
    }
    const std::string_view reason = after_version.size() > 4 ? after_version.substr(4) : "";
    for (const char c : reason) {
        if (!is_field_byte(static_cast<unsigned char>(c))) {
            return refuse("a control byte in the reason phrase");
        }
    }

    Response response;
    response.status = status;
    response.reason = std::string(reason);
    if (lines.size() - 1 > limits_.header_count) {
        return refuse("more than " + std::to_string(limits_.header_count) + " header lines");
    }
    for (std::size_t i = 1; i < lines.size(); ++i) {
        Header header;
        if (auto problem = parse_field_line(lines[i], header)) return refuse(std::move(*problem));
        response.headers.push_back(std::move(header));
    }

    if (status == 101) {
        // The client never asks to upgrade: a switch would hand the connection to another protocol.
        return refuse("101 Switching Protocols, which the request did not ask for");
    }
    if (status < 200) {
        pending_.clear();  // an interim response: the final one follows
        return state_;
    }
    response_ = std::move(response);
    raw_head_ = std::move(pending_);
    pending_.clear();
    const bool http10 = status_line.starts_with("HTTP/1.0");
    if (http10) {
        for (const Header &header : response_.headers) {
            // An HTTP/1.0 peer does not frame by chunks; a service claiming both smuggles a body.
            if (name_is(header, "transfer-encoding")) {
                return refuse("Transfer-Encoding in an HTTP/1.0 response");
            }
        }
    }
    return start_body();
}

ResponseParser::State ResponseParser::start_body() {
    std::optional<std::uint64_t> content_length;
    std::vector<std::string> codings;
    for (const Header &header : response_.headers) {
        if (name_is(header, "content-length")) {
            for (const std::string_view element : list_elements(header.value)) {
                const auto value = parse_decimal(element);
                if (!value) {
                    return refuse("a Content-Length that is not a decimal number of bytes: " +
                                  header.value);
                }
                // Two lengths let the record show one body while the service meant another.
                if (content_length && *content_length != *value) {
                    return refuse("Content-Length values that differ (" +
                                  std::to_string(*content_length) + " and " +
                                  std::to_string(*value) + ")");
                }
                content_length = value;
            }
        } else if (name_is(header, "transfer-encoding")) {
            for (const std::string_view element : list_elements(header.value)) {
                codings.push_back(lowercase(element));
            }
        }
    }
    if (!codings.empty()) {
        // Content-Length beside chunked is the classic request-smuggling ambiguity.
        if (content_length) return refuse("both Content-Length and Transfer-Encoding");
        if (codings != std::vector<std::string>{"chunked"}) {
            std::string listed;
            for (const auto &coding : codings) listed += (listed.empty() ? "" : ", ") + coding;
            return refuse("Transfer-Encoding \"" + listed + "\": only chunked is read");
        }
    }
    const int status = response_.status;
    if (head_request_ || status == 204 || status == 304) {
        state_ = State::done;
        return state_;
    }
    if (!codings.empty()) {
        phase_ = Phase::chunkSize;
        return state_;
    }
    if (content_length) {
        announced_ = *content_length;
        if (announced_ > limits_.body_bytes) {
            return too_large("a body of " + std::to_string(announced_) +
                             " bytes announced, over the limit of " +
                             std::to_string(limits_.body_bytes));
        }
        remaining_ = announced_;
        phase_ = Phase::fixedBody;
        if (remaining_ == 0) state_ = State::done;
        return state_;
    }
    phase_ = Phase::untilClose;
    return state_;
}

ResponseParser::State ResponseParser::append_body(std::string_view bytes) {
    if (bytes.size() > limits_.body_bytes - response_.body.size()) {
        return too_large("a body longer than the limit of " + std::to_string(limits_.body_bytes) +
                         " bytes");
    }
    response_.body.append(bytes);
    return state_;
}

ResponseParser::State ResponseParser::feed_fixed(std::string_view &bytes) {
    const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, bytes.size()));
    response_.body.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    remaining_ -= take;
    if (remaining_ == 0) state_ = State::done;
    return state_;
}

ResponseParser::State ResponseParser::chunk_size_line() {
    std::string_view line(pending_);
    line.remove_suffix(2);  // CRLF
    std::uint64_t size = 0;
    std::size_t digits = 0;
    for (; digits < line.size() && hex_digit(line[digits]) >= 0; ++digits) {
        // A size that wraps would let a short chunk pass for a long one.
        if (size > (std::numeric_limits<std::uint64_t>::max() >> 4)) {
            return refuse("a chunk size that overflows 64 bits");
        }
        size = (size << 4) | static_cast<std::uint64_t>(hex_digit(line[digits]));
    }
    if (digits == 0) return refuse("a chunk-size line that does not start with a hexadecimal size");
    std::string_view rest = line.substr(digits);
    while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
    if (!rest.empty() && rest.front() != ';') {
        return refuse("a chunk-size line with something other than extensions after the size");
    }
    for (const char c : rest) {
        if (!is_field_byte(static_cast<unsigned char>(c))) {
            return refuse("a control byte in a chunk extension");
        }
    }
    pending_.clear();
    if (size == 0) {
        phase_ = Phase::trailers;
        return state_;
    }
    if (size > limits_.body_bytes - response_.body.size()) {
        return too_large("a chunked body longer than the limit of " +
                         std::to_string(limits_.body_bytes) + " bytes");
    }
    remaining_ = size;
    phase_ = Phase::chunkData;
    return state_;
}

ResponseParser::State ResponseParser::feed_chunk_data(std::string_view &bytes) {
    const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, bytes.size()));
    response_.body.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    remaining_ -= take;
    if (remaining_ == 0) phase_ = Phase::chunkDataEnd;
    return state_;
}

ResponseParser::State ResponseParser::trailer_line() {
    head_bytes_used_ += pending_.size();
    std::string_view line(pending_);
    line.remove_suffix(2);
    if (line.empty()) {
        pending_.clear();
        state_ = State::done;
        return state_;
    }
    if (++trailer_count_ > limits_.header_count) {
        return refuse("more than " + std::to_string(limits_.header_count) + " trailer lines");
    }
    Header trailer;
    if (auto problem = parse_field_line(line, trailer))
        return refuse("in the trailers, " + *problem);
    pending_.clear();
    return state_;
}

}  // namespace tea::http
