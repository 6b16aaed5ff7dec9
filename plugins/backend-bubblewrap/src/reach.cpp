#include "reach.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string_view>
#include <tea/program_path.hpp>

#include "environment.hpp"

namespace tea::bwrap {

namespace fs = std::filesystem;

const LentTree *tree_of(const std::vector<LentTree> &lent, const fs::path &path) {
    const auto it =
        std::find_if(lent.begin(), lent.end(), [&](const LentTree &t) { return in_tree(t, path); });
    return it != lent.end() ? &*it : nullptr;
}

std::optional<fs::path> unreachable(const fs::path &path, const Identity &who,
                                    const std::vector<LentTree> &lent) {
    const auto *tree = tree_of(lent, path);
    return tree != nullptr ? unreachable_in_tree(*tree, path, who)
                           : unreachable_ancestor(path, who);
}

std::string exec_path(const std::string &argv0, const std::vector<std::string> &env,
                      const std::string &cwd, const Identity &who,
                      const std::vector<LentTree> &lent, const PrivateTemp &private_temp) {
    // As the identity that will exec it: root may run what the sandbox account may not reach.
    const auto executable = [&](const std::string &candidate) -> int {
        const auto on_host = candidate[0] == '/' ? candidate : cwd + "/" + candidate;
        struct stat st {};
        // A program the host keeps in its /tmp outside the call's grants is not in the view.
        if (private_temp.hides(on_host) || ::stat(on_host.c_str(), &st) != 0) {
            return ENOENT;
        }
        if (!S_ISREG(st.st_mode)) {
            return EACCES;
        }
        if (!who.dropped) {
            return ::access(on_host.c_str(), X_OK) == 0 ? 0 : EACCES;
        }
        if (const auto *tree = tree_of(lent, on_host)) {
            st = seen_in(*tree, st, who);
        }
        const mode_t run = st.st_uid == who.uid   ? S_IXUSR
                           : st.st_gid == who.gid ? S_IXGRP
                                                  : S_IXOTH;
        return (st.st_mode & run) != 0 && !unreachable(fs::path{on_host}.parent_path(), who, lent)
                   ? 0
                   : EACCES;
    };
    const bool has_path = std::any_of(
        env.begin(), env.end(), [](const std::string &e) { return e.rfind("PATH=", 0) == 0; });
    const std::string path = has_path ? env_value(env, "PATH") : std::string{};
    return tea::program_path::resolve(
               argv0, has_path ? std::optional<std::string_view>{path} : std::nullopt, executable)
        .path;
}

}  // namespace tea::bwrap
