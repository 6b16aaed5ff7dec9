#include "skill_install.hpp"

#include <cerrno>
#include <cstdio>
#include <system_error>
#include <tea/read_all.hpp>
#include <utility>
#include <vector>

#include "files/beneath.hpp"
#include "files/private_dirs.hpp"
#include "files/tree_walk.hpp"
#include "util/error.hpp"

namespace tea::skill_runner {
namespace {

namespace fs = std::filesystem;

struct SkillFile {
    std::string path;  // relative to the skill's folder
    std::string content;
    bool executable = false;
};

// Reads the whole skill into memory, refusing it on the first entry that may not be copied, so
// that a refused skill leaves nothing behind.
std::vector<SkillFile> read_skill(const fs::path &skill, const SkillLimits &limits) {
    std::vector<SkillFile> files;
    std::uint64_t total = 0;
    const auto refuse = [&](const std::string &rel, const std::string &why) {
        return usage_error("--skill: " + (skill / rel).lexically_normal().string() + ": " + why);
    };
    files::TreeLimits tree_limits;
    tree_limits.max_entries = limits.max_entries;
    tree_limits.max_depth = limits.max_depth;
    const auto walk = files::walk_tree(skill, tree_limits, [&](const files::TreeEntry &entry) {
        switch (entry.type) {
            case files::TreeEntryType::directory:
                return;
            case files::TreeEntryType::link:
                // A link would hand the agent, as part of the skill, a file the skill's author
                // pointed at anywhere the runner can read.
                throw refuse(entry.path, "a link (to '" + entry.link_text + "'): not copied");
            case files::TreeEntryType::other:
                throw refuse(entry.path, "not a regular file or a folder");
            case files::TreeEntryType::regular:
                break;
        }
        if (entry.size > limits.max_file_bytes) {
            throw refuse(entry.path,
                         "larger than " + std::to_string(limits.max_file_bytes) + " bytes");
        }
        total += entry.size;
        if (total > limits.max_total_bytes) {
            throw refuse(entry.path, "the skill is larger than " +
                                         std::to_string(limits.max_total_bytes) + " bytes");
        }
        auto content = read_all(entry.fd);
        if (content.size() != entry.size) {
            throw refuse(entry.path, "changed while it was read");
        }
        files.push_back(SkillFile{entry.path, std::move(content), (entry.mode & 0111) != 0});
    });
    if (!walk.complete()) {
        throw usage_error("--skill: " + skill.string() +
                          ": not read whole: " + walk.unreached.front());
    }
    bool has_skill_md = false;
    for (const auto &file : files) {
        has_skill_md = has_skill_md || file.path == "SKILL.md";
    }
    if (!has_skill_md) {
        throw usage_error("--skill: " + skill.string() + " holds no SKILL.md");
    }
    return files;
}

}  // namespace

std::string install_skill(const fs::path &skill, const fs::path &home,
                          const std::string &skills_dir, const SkillLimits &limits) {
    const auto folder = files::skill_folder_name(skill);
    if (!files::valid_skill_name(folder)) {
        throw usage_error("--skill: " + skill.string() + ": the folder's name '" + folder +
                          "' is not a skill name (1 to 64 letters, digits, '-' or '_', starting "
                          "with a letter or digit)");
    }
    const auto files = read_skill(skill, limits);
    // Staged beside the destination and renamed into place: the agent sees the old skill or the
    // new one, never a part.
    const auto staging_rel = skills_dir + "/." + folder + ".tea-" + files::random_token();
    for (const auto &file : files) {
        files::write_beneath(home, staging_rel + "/" + file.path, file.content);
        if (file.executable) {
            fs::permissions(home / staging_rel / file.path,
                            fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                            fs::perm_options::add);
        }
    }
    const auto destination = home / skills_dir / folder;
    files::remove_tree(destination);
    std::error_code ec;
    fs::rename(home / staging_rel, destination, ec);
    if (ec) {
        files::remove_tree(home / staging_rel);
        throw runtime_failure("cannot install the skill at " + destination.string() + ": " +
                              ec.message());
    }
    return folder;
}

}  // namespace tea::skill_runner
