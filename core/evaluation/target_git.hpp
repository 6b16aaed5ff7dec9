// The target's git: the private repository a confined call reads its project's history through
// (git/private_repository.hpp), as run's trials and exec give it.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "exec/exec_plan.hpp"
#include "files/private_dirs.hpp"
#include "git/workspace_source.hpp"

namespace tea::evaluation {

// Builds the private repository of the source's evaluated commit in a fresh directory of
// run_dir, withholding the repository-relative paths `withheld`; a build of the same commit is
// reused from <private root>/git-cache. Exit 12 (host_error) naming the reason when it cannot.
std::filesystem::path build_target_repository(const git::WorkspaceSource &source,
                                              const std::vector<std::string> &withheld,
                                              files::RunDirectory &run_dir);

// Withholds the source's git directory from the call, and the repository around it (a
// superproject, an outer repository): the project's history holds what --withhold hides in the
// work tree (and whatever else the user keeps there), so the target reads history through the
// private repository only, and a repository it makes in its workspace brings neither into view.
// A path the call withholds already is not added again.
void withhold_git_dirs(exec::LaunchSpec &spec, const git::WorkspaceSource &source);

// Grants the call's target the private repository read-only, with the settings its git needs
// to read a repository it does not own.
void grant_target_repository(exec::LaunchSpec &spec, const std::filesystem::path &repository);

// What exec's call got of its workspace's repository.
struct ExecGit {
    std::string history;  // "private repository", "none", or "" (no repository)
    // Holds the private repository and the call's home while the call runs (private repository).
    std::unique_ptr<files::RunDirectory> run_dir;
};

// exec's workspace in a git repository: the repository's git directory is withheld, and a
// workspace at the root of its work tree is shown a private repository of its HEAD's history
// (without the --withhold paths inside the repository) at its .git, which the backend binds
// read-only over the project's. The repository and the call's home are made in a run directory
// beneath private_root, so the backend grants the repository as part of the call's run.
ExecGit give_exec_target_git(exec::LaunchSpec &spec, const std::filesystem::path &private_root);

}  // namespace tea::evaluation
