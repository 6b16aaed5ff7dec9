#include "options.hpp"

#include <charconv>
#include <set>
#include <string_view>

#include "util/error.hpp"

namespace tea::skill_runner {
namespace {

unsigned parse_count(const std::string &option, const std::string &text, unsigned max) {
    unsigned value = 0;
    const auto *end = text.data() + text.size();
    const auto [at, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc{} || at != end || value == 0 || value > max) {
        throw usage_error(option + ": expected a whole number from 1 to " + std::to_string(max) +
                          ", got '" + text + "'");
    }
    return value;
}

}  // namespace

Options parse_options(const std::vector<std::string> &args) {
    Options options;
    bool agent_given = false;
    std::set<std::string> given;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string &arg = args[i];
        if (arg == "--") {
            options.agent_args.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                      args.end());
            break;
        }
        if (i + 1 >= args.size()) {
            throw usage_error(arg.rfind("--", 0) == 0 ? arg + ": expected a value"
                                                      : "unexpected argument '" + arg +
                                                            "' (agent arguments follow --)");
        }
        const std::string &value = args[++i];
        // A skill target's entry gives --skill before the probe's arguments: a probe that gave
        // it again would run another folder than the one `check` accepted.
        if (!given.insert(arg).second) {
            throw usage_error(arg + ": given twice");
        }
        if (arg == "--agent") {
            if (value == "claude") {
                options.agent = Agent::claude;
            } else if (value == "codex") {
                options.agent = Agent::codex;
            } else {
                throw usage_error("--agent: expected claude or codex, got '" + value + "'");
            }
            agent_given = true;
        } else if (arg == "--skill") {
            options.skill = value;
        } else if (arg == "--prompt-file") {
            options.prompt_file = value;
        } else if (arg == "--max-turns") {
            options.max_turns = parse_count(arg, value, 10'000);
        } else if (arg == "--max-seconds") {
            options.max_seconds = parse_count(arg, value, 7 * 24 * 3600);
        } else if (arg == "--transcript") {
            if (value.empty()) {
                throw usage_error("--transcript: expected a file name");
            }
            options.transcript = value;
        } else if (arg == "--agent-bin") {
            if (value.empty()) {
                throw usage_error("--agent-bin: expected a program");
            }
            options.agent_bin = value;
        } else {
            throw usage_error("unknown option '" + arg + "'");
        }
    }
    if (!agent_given) {
        throw usage_error("--agent is required (claude or codex)");
    }
    return options;
}

}  // namespace tea::skill_runner
