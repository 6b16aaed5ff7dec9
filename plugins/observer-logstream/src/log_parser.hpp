// One line of `log stream --style ndjson`, read for what the audit needs: a Seatbelt violation
// report, a notice that the log lost events, a notice that it was overloaded, or anything else.
// Pure and bounded: it never throws on its input and keeps nothing between lines, so it is tested
// against recorded lines (tests/plugins/observer-logstream) and measured in bench/.
//
// Each line is one JSON object (Apple's ndjson style) of which only these members are read:
//   eventType     "logEvent" for a message; "lossEvent" when the log dropped messages
//   eventMessage  for the sandbox: "Sandbox: <process>(<pid>) deny(<n>) <operation> <path>"
//   senderImagePath / processImagePath, which name the Sandbox extension for its reports
// and `log stream`'s first line, "Filtering the log data using ...", is its banner, not data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tea::logstream {

enum class LineKind : std::uint8_t {
    violation,   // a sandbox report: operation refused (or reported) for a path
    lost,        // the log says it dropped events
    overloaded,  // the log says it was handed reports faster than it keeps them
    unrelated,   // valid, and nothing the audit needs (another sender, the banner)
    malformed    // not a JSON object, or cut short: what it held is unknown
};

struct Violation {
    std::string process;    // the process name the report gives
    int pid = 0;            // 0..2147483647
    std::string action;     // "deny" or "allow" (a reported allow)
    std::string operation;  // "file-read-data", "network-outbound", ...
    std::string path;       // "" for an operation on no path
};

struct LogLine {
    LineKind kind = LineKind::unrelated;
    Violation violation;     // when kind is violation
    std::uint64_t lost = 0;  // when kind is lost: the count the notice gives, at least 1
    std::string timestamp;   // the line's timestamp member, as written
};

LogLine parse_log_line(std::string_view line);

// The message part alone, for a report already taken out of its JSON: false when it is no
// sandbox report.
bool parse_sandbox_message(std::string_view message, Violation &out);

}  // namespace tea::logstream
