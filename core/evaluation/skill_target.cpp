#include "evaluation/skill_target.hpp"

#include <algorithm>

namespace tea::evaluation {

bool is_skill_target(const Entry &entry) {
    return entry.kind == "command" && entry.executable == kSkillRunner;
}

void complete_skill_entry(Entry &entry) {
    auto &codes = entry.infrastructure_exit_codes;
    // A runner the target's view does not show (a runtime installed where targets cannot see)
    // would otherwise fail every trial of the skill, a verdict about the runtime's installation.
    for (const int code : {kSkillNoLogin, kSkillRunnerNotExecutable, kSkillRunnerNotFound}) {
        if (std::find(codes.begin(), codes.end(), code) == codes.end()) {
            codes.push_back(code);
        }
    }
    entry.artifacts.emplace("transcript", kSkillTranscript);
}

std::vector<std::string> skill_call_argv(const std::filesystem::path &runtime_prefix,
                                         const std::filesystem::path &workspace, const Entry &entry,
                                         const std::vector<std::string> &args) {
    std::vector<std::string> argv{(runtime_prefix / "bin" / kSkillRunner).string(), "--skill",
                                  (workspace / entry.target).string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

std::string skill_exit_meaning(int exit_code) {
    switch (exit_code) {
        case 0:
            return "done";
        case 2:
            return "usage";
        case kSkillNoLogin:
            return "the agent could not authenticate";
        case 5:
            return "the agent failed";
        case 6:
            return "turn or time budget reached";
        case kSkillRunnerNotExecutable:
        case kSkillRunnerNotFound:
            return "the runner did not start in the confinement (exit " +
                   std::to_string(exit_code) +
                   "): the runtime is installed where its targets cannot see it";
        default:
            return "exit " + std::to_string(exit_code);
    }
}

}  // namespace tea::evaluation
