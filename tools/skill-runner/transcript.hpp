// The agent's transcript: its JSON stream (one JSON value a line), written to a file as it comes
// and read line by line for what ends a session: a failed login, a spent turn budget, an error.
//
// The agent's output is not trusted to be what it claims: a line that is not JSON is counted, not
// fatal; bytes that are not UTF-8 are written as they came (the JSON check refuses them); and a
// line is held up to a cap, past which it is counted as not JSON and dropped from the check
// (never from the file), so a line of any length costs bounded memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "options.hpp"
#include "util/fd.hpp"

namespace tea::skill_runner {

// What the lines said.
struct TranscriptFindings {
    std::uint64_t lines = 0;
    std::uint64_t not_json = 0;          // lines that are not one JSON value, or past the cap
    bool authentication_failed = false;  // the CLI said it has no login or its login was refused
    bool turn_budget_reached = false;    // the CLI stopped at --max-turns
    bool result_seen = false;            // claude: a final "result" line
    bool result_is_error = false;        // claude: that result is an error
    std::string error;                   // the CLI's own words for what failed, when it said any
};

class TranscriptStream {
   public:
    static constexpr std::size_t kDefaultLineCap = 16 * 1024 * 1024;

    // `file` receives every byte; `agent` chooses how a line is read.
    TranscriptStream(UniqueFd file, Agent agent, std::size_t line_cap = kDefaultLineCap);

    // Writes the bytes to the file and checks each line they complete. Throws tea::Error when the
    // file cannot be written.
    void feed(std::string_view bytes);
    // Checks a last line with no newline. Call once, at the end of the stream.
    void finish();

    [[nodiscard]] const TranscriptFindings &findings() const { return findings_; }

   private:
    void check_line(std::string_view line);

    UniqueFd file_;
    Agent agent_;
    std::size_t line_cap_;
    std::string line_;
    bool line_overlong_ = false;
    TranscriptFindings findings_;
};

}  // namespace tea::skill_runner
