#include "log_parser.hpp"

#include <array>
#include <charconv>
#include <nlohmann/json.hpp>

namespace tea::logstream {

namespace {

using nlohmann::json;

constexpr std::string_view kBanner = "Filtering the log data";

// The phrases by which the unified log and the sandbox say reports were dropped or throttled.
// They are matched in the message of a line from the logging system or the Sandbox extension;
// the wording is Apple's and is to be confirmed on a macOS host (docs/macos.md).
constexpr std::array<std::string_view, 3> kLostPhrases{"lost", "dropped", "were not logged"};
constexpr std::array<std::string_view, 3> kOverloadPhrases{"rate limit", "throttl",
                                                           "duplicate report"};

bool contains(std::string_view text, std::string_view word) {
    return text.find(word) != std::string_view::npos;
}

// Takes only the top-level string members the audit reads, and never builds the document: a line
// is validated whole (a truncated one fails) but costs no allocation per member.
class Members : public json::json_sax_t {
   public:
    std::string event_type;
    std::string message;
    std::string sender;
    std::string process_image;
    std::string timestamp;
    bool object = false;

    bool null() override { return value_done(); }
    bool boolean(bool) override { return value_done(); }
    bool number_integer(number_integer_t) override { return value_done(); }
    bool number_unsigned(number_unsigned_t) override { return value_done(); }
    bool number_float(number_float_t, const string_t &) override { return value_done(); }
    bool string(string_t &val) override {
        if (depth_ == 1 && target_ != nullptr) {
            *target_ = std::move(val);
        }
        return value_done();
    }
    bool binary(binary_t &) override { return value_done(); }
    bool start_object(std::size_t) override {
        if (depth_ == 0) {
            object = true;
        }
        ++depth_;
        target_ = nullptr;
        return true;
    }
    bool key(string_t &val) override {
        target_ = nullptr;
        if (depth_ != 1) {
            return true;
        }
        if (val == "eventType") {
            target_ = &event_type;
        } else if (val == "eventMessage") {
            target_ = &message;
        } else if (val == "senderImagePath") {
            target_ = &sender;
        } else if (val == "processImagePath") {
            target_ = &process_image;
        } else if (val == "timestamp") {
            target_ = &timestamp;
        }
        return true;
    }
    bool end_object() override {
        --depth_;
        target_ = nullptr;
        return true;
    }
    bool start_array(std::size_t) override {
        ++depth_;
        target_ = nullptr;
        return true;
    }
    bool end_array() override {
        --depth_;
        return true;
    }
    bool parse_error(std::size_t, const std::string &,
                     const nlohmann::detail::exception &) override {
        return false;
    }

   private:
    bool value_done() {
        target_ = nullptr;
        return true;
    }
    int depth_ = 0;
    std::string *target_ = nullptr;
};

// The first whole number in `text` after `from`, or 1 when it gives none.
std::uint64_t count_in(std::string_view text) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] >= '0' && text[i] <= '9') {
            std::uint64_t n = 0;
            const auto r = std::from_chars(text.data() + i, text.data() + text.size(), n);
            if (r.ec == std::errc{} && n > 0) {
                return n;
            }
            return 1;
        }
    }
    return 1;
}

bool from_sandbox(const Members &m) {
    return contains(m.sender, "Sandbox") || contains(m.process_image, "Sandbox");
}

bool from_logging(const Members &m) {
    return contains(m.sender, "logd") || contains(m.process_image, "logd") ||
           contains(m.sender, "libsystem_trace") || contains(m.process_image, "/usr/bin/log");
}

}  // namespace

bool parse_sandbox_message(std::string_view message, Violation &out) {
    constexpr std::string_view kPrefix = "Sandbox: ";
    const auto start = message.find(kPrefix);
    if (start == std::string_view::npos) {
        return false;
    }
    std::string_view rest = message.substr(start + kPrefix.size());
    // "<process>(<pid>) " -- the name may itself hold parentheses, so the pid is the last
    // parenthesised number before " deny(" or " allow(".
    auto action_at = rest.find(") deny(");
    std::string_view action = "deny";
    if (action_at == std::string_view::npos) {
        action_at = rest.find(") allow(");
        action = "allow";
    }
    if (action_at == std::string_view::npos) {
        return false;
    }
    const auto open = rest.rfind('(', action_at);
    if (open == std::string_view::npos || open == 0) {
        return false;
    }
    int pid = 0;
    const auto *pid_end = rest.data() + action_at;
    const auto r = std::from_chars(rest.data() + open + 1, pid_end, pid);
    if (r.ec != std::errc{} || r.ptr != pid_end || pid < 0) {
        return false;
    }
    std::string_view after = rest.substr(action_at + 2);  // "deny(1) op path"
    const auto close = after.find(") ");
    if (close == std::string_view::npos) {
        return false;
    }
    after.remove_prefix(close + 2);
    const auto space = after.find(' ');
    out.process = std::string{rest.substr(0, open)};
    out.pid = pid;
    out.action = std::string{action};
    out.operation = std::string{after.substr(0, space)};
    out.path =
        space == std::string_view::npos ? std::string{} : std::string{after.substr(space + 1)};
    return !out.operation.empty();
}

LogLine parse_log_line(std::string_view line) {
    LogLine out;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
        line.remove_suffix(1);
    }
    if (line.empty() || line.substr(0, kBanner.size()) == kBanner) {
        out.kind = LineKind::unrelated;
        return out;
    }
    Members m;
    const bool ok = json::sax_parse(line.begin(), line.end(), &m, json::input_format_t::json, true);
    if (!ok || !m.object) {
        out.kind = LineKind::malformed;
        return out;
    }
    out.timestamp = std::move(m.timestamp);
    if (m.event_type == "lossEvent") {
        out.kind = LineKind::lost;
        out.lost = count_in(m.message);
        return out;
    }
    const bool sandbox = from_sandbox(m);
    if (sandbox || from_logging(m)) {
        for (const auto phrase : kOverloadPhrases) {
            if (contains(m.message, phrase)) {
                out.kind = LineKind::overloaded;
                return out;
            }
        }
        if (!sandbox || !contains(m.message, "Sandbox: ") ||
            !parse_sandbox_message(m.message, out.violation)) {
            for (const auto phrase : kLostPhrases) {
                if (contains(m.message, phrase)) {
                    out.kind = LineKind::lost;
                    out.lost = count_in(m.message);
                    return out;
                }
            }
            out.kind = LineKind::unrelated;
            return out;
        }
        out.kind = LineKind::violation;
        return out;
    }
    out.kind = LineKind::unrelated;
    return out;
}

}  // namespace tea::logstream
