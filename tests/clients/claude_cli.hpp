// How the client tests run the real Claude Code CLI (TEA_TEST_CLAUDE, installed by
// scripts/install-deps.sh): the variables that keep it from reaching anything but the API it is
// pointed at, and the arguments of one scripted, non-interactive session. The names are the ones
// the pinned version reads (tests/clients/README.md says where in its bundle).
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace tea::test::clients {

// The variables of every test session. All but the last turn off a route the CLI would otherwise
// open to a host of Anthropic's or Bun's on its own: a test that leaves one on would send a
// request off this machine.
inline const std::vector<std::string> &claude_test_environment() {
    static const std::vector<std::string> names{
        // Every call but the model's: feature flags, metrics, the start-up /api/hello check,
        // feedback, plugin and update downloads.
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
        // Named on their own too, so a version that narrows the switch above still keeps them
        // off: the update check, usage metrics, error reports.
        "DISABLE_AUTOUPDATER=1",
        "DISABLE_TELEMETRY=1",
        "DISABLE_ERROR_REPORTING=1",
        // The Bun runtime inside the binary reports its own crashes to bun.report.
        "BUN_ENABLE_CRASH_REPORTING=0",
        // A request that fails ends the session at once, where the CLI would otherwise back off
        // and retry ten times over minutes.
        "CLAUDE_CODE_MAX_RETRIES=0",
    };
    return names;
}

// `claude -p PROMPT` in stream-json (every message and the result, one JSON object a line),
// allowed the tools the mock's scripts call without asking.
inline std::vector<std::string> claude_session(const std::string &prompt) {
    return {TEA_TEST_CLAUDE, "-p",        prompt,           "--output-format",
            "stream-json",   "--verbose", "--allowedTools", "Write,Read"};
}

// The text of the session's result, from its stream-json output ("" when it printed none).
inline std::string claude_result(const std::string &out) {
    std::string result;
    std::istringstream lines{out};
    for (std::string line; std::getline(lines, line);) {
        const auto message = nlohmann::json::parse(line, nullptr, false);
        if (message.is_object() && message.value("type", "") == "result") {
            result = message.value("result", "");
        }
    }
    return result;
}

}  // namespace tea::test::clients
