// The command line of tea-skill-runner (docs/agent-evaluations.md, "Skill targets"):
//
//   tea-skill-runner --agent claude|codex [--skill DIR] [--prompt-file F] [--max-turns N]
//                    [--max-seconds S] [--transcript F] [--agent-bin PATH] -- [agent args]
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tea::skill_runner {

enum class Agent { claude, codex };

struct Options {
    Agent agent = Agent::claude;
    std::optional<std::string> skill;        // a folder holding SKILL.md
    std::optional<std::string> prompt_file;  // else the prompt is read from stdin
    unsigned max_turns = 20;
    unsigned max_seconds = 600;
    std::string transcript = "transcript.jsonl";
    std::optional<std::string> agent_bin;  // else the CLI's name, found on PATH
    std::vector<std::string> agent_args;   // what follows "--", handed to the agent as they are
};

// Parses argv[1..]. Throws tea::Error (usage, exit 2) naming the option at fault.
Options parse_options(const std::vector<std::string> &args);

}  // namespace tea::skill_runner
