// Installing a skill (a folder holding SKILL.md) where an agent CLI looks for skills in its home.
//
// The skill comes from the project under evaluation, which the evaluation's author does not
// control: it is read by descriptor with no link followed (files::walk_tree), and anything but
// folders and regular files, or a tree past the limits below, is refused naming the path, before
// anything is written. The copy is made beside its destination and renamed into place, so an
// agent never finds half a skill.
#pragma once

#include <filesystem>
#include <string>

#include "files/skill_folder.hpp"

namespace tea::skill_runner {

using files::SkillLimits;

// Copies the skill folder to home/skills_dir/<its name>/ (skills_dir relative to home, such as
// ".claude/skills"), replacing an earlier copy. Returns the skill's name. Throws tea::Error
// (usage, exit 2) naming the path at fault: a link, a special file, a file or tree too large, a
// missing SKILL.md, an invalid name.
std::string install_skill(const std::filesystem::path &skill, const std::filesystem::path &home,
                          const std::string &skills_dir, const SkillLimits &limits = {});

}  // namespace tea::skill_runner
