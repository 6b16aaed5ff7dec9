// Skill targets: a "command" entry whose executable is tea-skill-runner runs an agent CLI on a
// skill of the project (docs/agent-evaluations.md, "Skill targets").
//
// The entry's `target` names the skill's folder in the project, not a program: each call runs the
// runtime's own tea-skill-runner (under the runtime's prefix, which every confined call sees
// read-only) with `--skill <the folder in the call's workspace>` before the probe's arguments.
// The call is confined, audited and recorded like any other; the entry's login gives the agent
// its credentials.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "evaluation/evaluation.hpp"

namespace tea::evaluation {

inline constexpr const char *kSkillRunner = "tea-skill-runner";
// The runner's exit when the agent could not authenticate: the login, not the skill, failed, so
// the call is an infrastructure error whatever the entry lists.
inline constexpr int kSkillNoLogin = 4;
// What the call answers when the runner itself never ran in the confinement (126: not
// executable, 127: not found, as the helper reports them): the runner exits neither, so they
// name the runtime's installation, never the skill, and are infrastructure errors as well.
inline constexpr int kSkillRunnerNotExecutable = 126;
inline constexpr int kSkillRunnerNotFound = 127;
// Where the runner writes the agent's transcript (its default, in the workspace), collected as
// the artifact "transcript" unless the entry names that artifact itself.
inline constexpr const char *kSkillTranscript = "transcript.jsonl";

bool is_skill_target(const Entry &entry);

// A skill entry's implied settings: exits 4, 126 and 127 infrastructure codes, the transcript an
// artifact.
void complete_skill_entry(Entry &entry);

// The call's command line: <runtime prefix>/bin/tea-skill-runner --skill <workspace>/<target>
// followed by the probe's arguments.
std::vector<std::string> skill_call_argv(const std::filesystem::path &runtime_prefix,
                                         const std::filesystem::path &workspace, const Entry &entry,
                                         const std::vector<std::string> &args);

// What the runner's exit code means (docs/agent-evaluations.md), for the call's record.
std::string skill_exit_meaning(int exit_code);

}  // namespace tea::evaluation
