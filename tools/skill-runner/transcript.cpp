#include "transcript.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "util/error.hpp"

namespace tea::skill_runner {
namespace {

using nlohmann::json;

std::string text_of(const json &value) {
    return value.is_string() ? value.get<std::string>() : std::string{};
}

// Claude Code 2.1.332, as tests/clients shows it: a session with no login, or whose token the
// API refuses with 401, prints an assistant message with "error": "authentication_failed" (and a
// result with api_error_status 401 for a refused token); a session stopped by --max-turns ends
// with a result of subtype "error_max_turns".
void read_claude_line(const json &line, TranscriptFindings &findings) {
    const auto type = text_of(line.value("type", json{}));
    if (type == "assistant" && text_of(line.value("error", json{})) == "authentication_failed") {
        findings.authentication_failed = true;
    }
    if (type != "result") {
        return;
    }
    findings.result_seen = true;
    findings.result_is_error =
        line.value("is_error", json{}).is_boolean() && line.value("is_error", json{}).get<bool>();
    const auto status = line.value("api_error_status", json{});
    if (status.is_number_integer() && status.get<int>() == 401) {
        findings.authentication_failed = true;
    }
    if (text_of(line.value("subtype", json{})) == "error_max_turns") {
        findings.turn_budget_reached = true;
    }
    if (findings.result_is_error) {
        findings.error = text_of(line.value("result", json{}));
    }
}

// Codex's `exec --json` events: an "error" or "turn.failed" event carries the failure's message;
// one that names a 401 is a login the API refused. Not run here (no codex on the test machines):
// the event names are those of codex's documented JSON output.
void read_codex_line(const json &line, TranscriptFindings &findings) {
    const auto type = text_of(line.value("type", json{}));
    if (type != "error" && type != "turn.failed") {
        return;
    }
    auto message = text_of(line.value("message", json{}));
    if (message.empty() && line.value("error", json{}).is_object()) {
        message = text_of(line["error"].value("message", json{}));
    }
    findings.result_is_error = true;
    findings.error = message;
    if (message.find("401") != std::string::npos ||
        message.find("Unauthorized") != std::string::npos) {
        findings.authentication_failed = true;
    }
}

}  // namespace

TranscriptStream::TranscriptStream(UniqueFd file, Agent agent, std::size_t line_cap)
    : file_(std::move(file)), agent_(agent), line_cap_(line_cap) {}

void TranscriptStream::feed(std::string_view bytes) {
    for (std::string_view rest = bytes; !rest.empty();) {
        const auto n = ::write(file_.get(), rest.data(), rest.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            throw runtime_failure(std::string{"cannot write the transcript: "} +
                                  std::strerror(n < 0 ? errno : EIO));
        }
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
    while (!bytes.empty()) {
        const auto newline = bytes.find('\n');
        const auto piece = bytes.substr(0, newline);
        if (!line_overlong_) {
            if (line_.size() + piece.size() > line_cap_) {
                line_overlong_ = true;  // counted when it ends; its bytes are no longer held
                line_.clear();
                line_.shrink_to_fit();
            } else {
                line_.append(piece);
            }
        }
        if (newline == std::string_view::npos) {
            return;
        }
        if (line_overlong_) {
            ++findings_.lines;
            ++findings_.not_json;
        } else {
            check_line(line_);
        }
        line_.clear();
        line_overlong_ = false;
        bytes.remove_prefix(newline + 1);
    }
}

void TranscriptStream::finish() {
    if (line_overlong_) {
        ++findings_.lines;
        ++findings_.not_json;
    } else if (!line_.empty()) {
        check_line(line_);
    }
    line_.clear();
    line_overlong_ = false;
}

void TranscriptStream::check_line(std::string_view line) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
        return;  // a blank line is no message, and no fault
    }
    ++findings_.lines;
    // nlohmann refuses bytes that are not UTF-8 and never throws with allow_exceptions false.
    const auto value = json::parse(line, nullptr, false);
    if (value.is_discarded()) {
        ++findings_.not_json;
        return;
    }
    if (!value.is_object()) {
        return;
    }
    if (agent_ == Agent::claude) {
        read_claude_line(value, findings_);
    } else {
        read_codex_line(value, findings_);
    }
}

}  // namespace tea::skill_runner
