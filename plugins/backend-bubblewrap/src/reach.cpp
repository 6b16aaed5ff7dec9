#include "reach.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

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
    const auto executable = [&](const std::string &candidate) {
        const auto on_host = candidate[0] == '/' ? candidate : cwd + "/" + candidate;
        struct stat st {};
        // A program the host keeps in its /tmp outside the call's grants is not in the view.
        if (private_temp.hides(on_host) || ::stat(on_host.c_str(), &st) != 0 ||
            !S_ISREG(st.st_mode)) {
            return false;
        }
        if (!who.dropped) {
            return ::access(on_host.c_str(), X_OK) == 0;
        }
        if (const auto *tree = tree_of(lent, on_host)) {
            st = seen_in(*tree, st, who);
        }
        const mode_t run = st.st_uid == who.uid   ? S_IXUSR
                           : st.st_gid == who.gid ? S_IXGRP
                                                  : S_IXOTH;
        return (st.st_mode & run) != 0 && !unreachable(fs::path{on_host}.parent_path(), who, lent);
    };
    if (argv0.find('/') != std::string::npos) {
        return executable(argv0) ? argv0 : std::string{};
    }
    const bool has_path = std::any_of(
        env.begin(), env.end(), [](const std::string &e) { return e.rfind("PATH=", 0) == 0; });
    const std::string path = has_path ? env_value(env, "PATH") : "/bin:/usr/bin";
    std::size_t begin = 0;
    for (;;) {
        const auto end = path.find(':', begin);
        std::string candidate = path.substr(begin, end == std::string::npos ? end : end - begin);
        if (candidate.empty()) {
            candidate = argv0;  // an empty entry: the working directory
        } else {
            candidate += '/';
            candidate += argv0;
        }
        if (executable(candidate)) {
            return candidate;
        }
        if (end == std::string::npos) {
            return {};
        }
        begin = end + 1;
    }
}

}  // namespace tea::bwrap
