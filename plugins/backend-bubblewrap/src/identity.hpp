// The host identity bubblewrap runs as.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tea::bwrap {

struct Identity {
    uid_t uid = 0;
    gid_t gid = 0;
    bool dropped = false;  // true when the runtime is root and hands the call to `uid`
};

// The identity the sandbox runs as: the caller's own when it is not root;
// otherwise the account `sandbox_user`, which must exist and not be root.
// Throws tea::sdk::Unavailable naming the way out.
Identity sandbox_identity(const std::string &sandbox_user);

// Whether `who` may search the directory `path` whose status is `st`: by its mode bits, or
// perhaps through an access ACL, which counts as yes (the safe answer for the socket masks).
bool may_search(const struct stat &st, const char *path, const Identity &who);

// The first ancestor directory of `path` (or `path` itself) that `who`
// cannot search, or nullopt when it can reach the path.
std::optional<std::filesystem::path> unreachable_ancestor(const std::filesystem::path &path,
                                                          const Identity &who);

// A tree the plan lends to `who` (the workspace, a home made on the host): the runtime shows it
// at its own path in the call's mount namespace, whatever lies above it, through an idmapped
// mount in which the owner of the tree's top is `who` (plugin-authoring.md, "lend").
struct LentTree {
    std::filesystem::path top;
    uid_t owner_uid = 0;
    gid_t owner_gid = 0;
};

// The tree at `top` as lent; nullopt when it cannot be looked at.
std::optional<LentTree> lent_tree(const std::string &top);

// Whether `path` lies in the tree (its top included).
bool in_tree(const LentTree &tree, const std::filesystem::path &path);

// `st` as `who` sees it through the tree's mount: the owner's ids are `who`'s, any other owner
// is someone else.
struct stat seen_in(const LentTree &tree, struct stat st, const Identity &who);

// As unreachable_ancestor for a path in a lent tree: only the directories from the tree's top down
// count, each as seen through the tree's mount.
std::optional<std::filesystem::path> unreachable_in_tree(const LentTree &tree,
                                                         const std::filesystem::path &path,
                                                         const Identity &who);

}  // namespace tea::bwrap
