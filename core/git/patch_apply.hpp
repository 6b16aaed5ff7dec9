// A patch (git's diff format) applied to the evaluated commit's tree in memory, with libgit2's
// git_apply_to_tree: no work tree, index or object database is written. What it changes comes
// back as files, for qualify's mutated arms to write into a fresh workspace.
#pragma once

#include <string>
#include <vector>

#include "git/workspace_source.hpp"

namespace tea::git {

struct PatchedFile {
    std::string path;  // relative to the project root, as the patch names it
    bool removed = false;
    std::string content;  // after the patch (empty when removed)
    bool executable = false;
    bool link = false;       // a symbolic link after the patch (mode 120000)
    bool submodule = false;  // a gitlink after the patch (mode 160000)
};

// Applies `patch` to the tree of source.commit (its subtree at source.prefix). Throws
// WorkspaceSourceError with libgit2's reason when the text is not a patch or does not apply, and
// for a source that is not a git repository.
std::vector<PatchedFile> apply_patch(const WorkspaceSource &source, const std::string &patch);

}  // namespace tea::git
