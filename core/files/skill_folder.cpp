#include "files/skill_folder.hpp"

#include "files/tree_walk.hpp"
#include "util/error.hpp"

namespace tea::files {

bool valid_skill_name(const std::string &name) {
    if (name.empty() || name.size() > 64) {
        return false;
    }
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        const bool alnum =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '-' && c != '_'))) {
            return false;
        }
    }
    return true;
}

std::string skill_folder_name(const std::filesystem::path &folder) {
    auto normal = folder.lexically_normal();
    if (!normal.has_filename()) {
        normal = normal.parent_path();
    }
    return normal.filename().string();
}

std::optional<std::string> why_not_skill_folder(const std::filesystem::path &folder,
                                                const SkillLimits &limits) {
    const auto name = skill_folder_name(folder);
    if (!valid_skill_name(name)) {
        return "is named '" + name +
               "', which is no skill's name (1 to 64 letters, digits, '-' or '_', starting with a "
               "letter or digit)";
    }
    TreeLimits tree_limits;
    tree_limits.max_entries = limits.max_entries;
    tree_limits.max_depth = limits.max_depth;
    std::optional<std::string> why;
    std::uint64_t total = 0;
    bool has_skill_md = false;
    try {
        const auto walk = walk_tree(folder, tree_limits, [&](const TreeEntry &entry) {
            if (why) {
                return;
            }
            if (entry.type == TreeEntryType::link) {
                why = "holds a link at " + entry.path + " (to '" + entry.link_text + "')";
            } else if (entry.type == TreeEntryType::other) {
                why = "holds " + entry.path + ", which is neither a folder nor a regular file";
            } else if (entry.type == TreeEntryType::regular) {
                total += entry.size;
                has_skill_md = has_skill_md || entry.path == "SKILL.md";
                if (entry.size > limits.max_file_bytes) {
                    why = "holds " + entry.path + ", larger than " +
                          std::to_string(limits.max_file_bytes) + " bytes";
                } else if (total > limits.max_total_bytes) {
                    why = "is larger than " + std::to_string(limits.max_total_bytes) + " bytes";
                }
            }
        });
        if (!why && !walk.complete()) {
            why = "cannot be read whole: " + walk.unreached.front();
        }
    } catch (const Error &error) {
        return std::string{"is not a folder that can be read: "} + error.what();
    }
    if (!why && !has_skill_md) {
        why = "holds no SKILL.md";
    }
    return why;
}

}  // namespace tea::files
