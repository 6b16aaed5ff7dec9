// A skill: a folder holding SKILL.md (and whatever else the skill ships), that an agent CLI loads
// from its home. Checked by `check` for a skill target's folder in the project, and again by
// tea-skill-runner when it installs the folder's copy in the workspace (docs/agent-evaluations.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace tea::files {

// What a skill may hold. A skill is instructions and a few scripts: a larger tree is a mistake
// (a build folder, a data set) that would be copied into the agent's home on every call.
struct SkillLimits {
    std::uint64_t max_file_bytes = 1024 * 1024;
    std::uint64_t max_total_bytes = 8 * 1024 * 1024;
    std::size_t max_entries = 1000;  // folders and files, the root included
    std::size_t max_depth = 16;
};

// Whether `name` may name a skill: 1 to 64 of ASCII letters, digits, '-' and '_', the first a
// letter or digit. The folder's name becomes a folder in the agent's home and the name it calls.
bool valid_skill_name(const std::string &name);

// The folder's name as a skill's: "skills/notes/" and "skills/notes" are "notes".
std::string skill_folder_name(const std::filesystem::path &folder);

// Why `folder` is no skill, as a phrase that follows its name ("holds a link at scripts/x");
// std::nullopt when it is one: a folder (not a link) with a valid name, holding SKILL.md, only
// folders and regular files, within the limits.
std::optional<std::string> why_not_skill_folder(const std::filesystem::path &folder,
                                                const SkillLimits &limits = {});

}  // namespace tea::files
