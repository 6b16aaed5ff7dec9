// The host identity bubblewrap runs as.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

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

}  // namespace tea::bwrap
