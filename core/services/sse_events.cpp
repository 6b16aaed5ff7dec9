#include "services/sse_events.hpp"

namespace tea::services {

void SseEvents::feed(std::string_view bytes) {
    while (!bytes.empty()) {
        if (after_cr_) {
            after_cr_ = false;
            if (bytes.front() == '\n') {
                bytes.remove_prefix(1);
                continue;
            }
        }
        const auto end = bytes.find_first_of("\r\n");
        if (end == std::string_view::npos) {
            pending_.append(bytes);
            return;
        }
        pending_.append(bytes.substr(0, end));
        after_cr_ = bytes[end] == '\r';
        bytes.remove_prefix(end + 1);
        line(pending_);
        pending_.clear();
    }
}

void SseEvents::finish() {
    if (!pending_.empty()) {
        event_lines_ += pending_;
        pending_.clear();
    }
    if (!event_lines_.empty()) {
        on_junk_(event_lines_);
    }
    event_lines_.clear();
    data_.clear();
    has_data_ = false;
}

void SseEvents::line(std::string_view text) {
    if (text.empty()) {
        if (has_data_) {
            on_data_(data_);
        }
        data_.clear();
        has_data_ = false;
        event_lines_.clear();
        return;
    }
    event_lines_.append(text).append("\n");
    if (text.front() == ':') {
        return;  // a comment: a server's keep-alive
    }
    const auto colon = text.find(':');
    const std::string_view field = text.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : text.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') {
        value.remove_prefix(1);
    }
    if (field == "data") {
        if (has_data_) {
            data_ += '\n';
        }
        data_.append(value);
        has_data_ = true;
    } else if (field != "event" && field != "id" && field != "retry") {
        on_junk_(text);
    }
}

}  // namespace tea::services
