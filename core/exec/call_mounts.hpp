// The call's own mount namespace, made by the runtime as root before the call's first process:
// each lent tree attached at its own path (an idmapped copy, see idmap.hpp), and each directory
// above one that the target's identity may not search covered by an empty directory of mode 0711
// that holds only the way down to the tree. The runner starts the plan's processes in it
// (RunOptions::mount_namespace), so a confinement built as that identity finds every tree where
// the plan names it, /root/project included, and lists nothing else of the covered directories.
// Nothing of it shows on the host, and nothing has to be removed: it ends with its last process
// and its last descriptor, even when the runtime is killed.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <vector>

#include "util/fd.hpp"

namespace tea::exec {

// A detached mount (the descriptor open_tree gave) and where the call sees it.
struct TreeAt {
    std::filesystem::path path;  // absolute, without links
    int tree = -1;
};

// The namespace, as a descriptor of it; invalid when there is no tree. `covered_mounts` are paths
// the plan mounts over (the withheld ones): one that lies in a cover gets an empty entry of its
// type there, so that the plan's mount finds its mount point. Throws tea::Error (exit 125)
// naming the step and the path that failed.
UniqueFd call_mount_namespace(const std::vector<TreeAt> &trees, uid_t uid, gid_t gid,
                              const std::vector<std::filesystem::path> &covered_mounts = {});

// The outermost directory above `path` that uid and gid (with no other group) may not search,
// by its mode bits; nullopt when there is none, or when a directory on the way is missing.
std::optional<std::filesystem::path> unsearchable_ancestor(const std::filesystem::path &path,
                                                           uid_t uid, gid_t gid);

}  // namespace tea::exec
