// What the identity the target runs as can reach of the host, as the call's view will show it:
// the directories it may search (in a lent tree, as the tree's owner), and the program its exec
// will name.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "identity.hpp"
#include "private_temp.hpp"

namespace tea::bwrap {

// The lent tree `path` lies in, or nullptr.
const LentTree *tree_of(const std::vector<LentTree> &lent, const std::filesystem::path &path);

// The first directory on the way to `path` that `who` cannot search in the call's view: below
// the top of a lent tree for a path in one, every ancestor otherwise.
std::optional<std::filesystem::path> unreachable(const std::filesystem::path &path,
                                                 const Identity &who,
                                                 const std::vector<LentTree> &lent);

// The path execvp (bwrap's, with the target's PATH) will name when it starts the target, as the
// trace shows it (tea/program_path.hpp searches as execvp does), judged as the identity that will
// exec it in the call's view. Empty when there is none: the caller then keeps a launcher, whose
// own "not found" the target's exit status reports. A view that differs from the host (a PATH
// entry under a withheld folder) makes the exec name another path; the audit then never sees the
// target start and marks the call incomplete: it fails closed.
std::string exec_path(const std::string &argv0, const std::vector<std::string> &env,
                      const std::string &cwd, const Identity &who,
                      const std::vector<LentTree> &lent, const PrivateTemp &private_temp);

}  // namespace tea::bwrap
