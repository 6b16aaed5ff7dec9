// Which git directory a work tree's history is read from, found without git's discovery, and the
// checks that it holds its own objects and names no others.
//
// A confined target may write its whole workspace, and what it writes there stays for the next
// call. Git's discovery takes whatever a `.git` entry names: a `gitdir:` file naming any repository
// on the host, a `.git` directory whose `commondir`, `objects/info/alternates`, symbolic links or
// `[include]` reach another repository's files. The runtime reads the project's objects as
// itself, so following any of them would build the target's private repository (or run's trial
// workspace) from a repository the target may not read: the evaluation's own, a grading
// repository, another of the user's. Here the layouts a real checkout has are accepted, each by
// evidence the target cannot write, and everything else is refused with the file and the reason.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>

#include "git/libgit2.hpp"

namespace tea::git {

class GitDirectoryError : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
};

struct GitDirectory {
    // Where HEAD is: a linked worktree's <common>/worktrees/<name>, otherwise common_dir.
    std::filesystem::path git_dir;
    std::filesystem::path common_dir;  // objects, refs and the configuration
};

// The git directory work_tree/.git stands for, or nullopt when work_tree has no `.git` entry.
// work_tree must be canonical. Accepted:
//  - a directory with no `commondir` file: the git directory itself;
//  - a `gitdir: X` file, X outside work_tree, when X is a linked worktree's administrative
//    directory (<C>/worktrees/<name>, its commondir naming C) whose `gitdir` file names
//    work_tree/.git back, or a submodule's git directory (no commondir) whose core.worktree names
//    work_tree back. A repository elsewhere names its own work tree, never this one.
// Anything else (a symbolic link, a gitdir: naming another repository or a place inside the work
// tree, a commondir in a .git directory) throws GitDirectoryError naming the file and why.
std::optional<GitDirectory> work_tree_git_directory(const std::filesystem::path &work_tree);

// A git directory named directly by the runtime (not found in a work tree): the directory itself,
// or a linked worktree's administrative directory with its common directory. Throws
// GitDirectoryError for a commondir of any other form.
GitDirectory git_directory_at(const std::filesystem::path &git_dir);

struct EnclosingRepository {
    std::filesystem::path work_tree;  // the ancestor holding the .git (empty: inside_git_dir)
    GitDirectory directory;
    bool inside_git_dir = false;  // the path lies inside the git directory itself
};

// The repository around dir, canonical, found from dir's parent upwards: the first ancestor with
// a `.git` entry (taken by work_tree_git_directory's rules) or that is itself a git directory.
// dir itself is never looked at: what the work tree holds cannot stand for the repository above it.
std::optional<EnclosingRepository> enclosing_repository(const std::filesystem::path &dir);

// Refuses (GitDirectoryError naming the file) a git directory that could make the runtime read
// files of another repository: a commondir other than a linked worktree's, an alternates file, a
// symbolic link or a special file anywhere under objects/ or refs/ or at HEAD, packed-refs,
// shallow or a configuration file, and an [include] or [includeIf] section in a configuration.
void check_self_contained(const GitDirectory &directory);

// Opens directory once check_self_contained has passed, with neither discovery nor a `.git` file
// read; libgit2 must then agree on both directories. Throws GitDirectoryError.
GitPtr<git_repository, git_repository_free> open_self_contained(const GitDirectory &directory);

}  // namespace tea::git
