// Where a trial's workspace comes from: the evaluated commit of the project's git repository, or,
// for a project in no repository, a clean copy of the project's directory.
//
// Each trial starts from the same source, fresh: files are written from the commit's objects (no
// index, no .git, no filters), so nothing a previous trial or the host's working tree holds leaks
// into the next workspace. The evaluation folder is never written into a workspace: a copy there
// would hand the target the grading material the confinement withholds at its real path.
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tea::git {

class WorkspaceSourceError : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
};

// The evaluated commit's own objects are not all on disk: a partial clone (--filter=blob:none,
// --filter=tree:0) or a sparse checkout that never fetched them. The runtime fetches nothing, so
// no workspace can be made of the commit; the message names the commit and the first object.
class MissingObjectsError : public WorkspaceSourceError {
   public:
    MissingObjectsError(std::string commit, const std::string &what)
        : WorkspaceSourceError(what), commit_(std::move(commit)) {}
    [[nodiscard]] const std::string &commit() const { return commit_; }

   private:
    std::string commit_;
};

struct WorkspaceSource {
    std::filesystem::path project_root;  // canonical
    bool git = false;
    std::string commit;             // the evaluated commit (git only)
    std::filesystem::path git_dir;  // the repository's common git directory (git only)
    // Where the work tree's HEAD is: a linked worktree's <git_dir>/worktrees/<name>, otherwise
    // git_dir (git only).
    std::filesystem::path worktree_git_dir;
    std::filesystem::path worktree;  // the repository's work tree (git only)
    // The common git directory of a repository around the project's own (a submodule's
    // superproject, the repository a nested one lies in), to be withheld with git_dir: a
    // repository made inside the folder must not bring the one around it into view. Empty when
    // there is none, or when the project lies inside it.
    std::filesystem::path enclosing_git_dir;
    std::string prefix;  // the project root inside the work tree ("" at its root)
    // What else the evaluation layer must not change (git only), each existing and absolute: the
    // hooks directory core.hooksPath names when it lies outside the git directory (a husky
    // project's .husky/_), and the work tree's .git when it is a file (a linked worktree or a
    // submodule), which says which repository the checkout belongs to.
    std::vector<std::filesystem::path> protected_paths;
    std::vector<std::string> excluded;  // project-relative paths never written (the eval folder)
};

// Finds the repository holding project_root, if any, without git's discovery
// (git/git_directory.hpp): project_root's own `.git` when it has one, else the first ancestor's.
// Resolves HEAD to the evaluated commit. Throws WorkspaceSourceError naming the project and, for
// a `.git` the runtime does not follow or a git directory that is not self-contained, the file
// and why. A project whose own folder the repository around it holds as a directory of its HEAD
// commit takes its history from that repository: a `.git` there is refused. Without
// require_commit (exec) a repository with no commit is opened with an empty commit, and a project
// in a subfolder of its work tree is only located: its history is never read.
WorkspaceSource open_workspace_source(const std::filesystem::path &project_root,
                                      const std::vector<std::string> &excluded,
                                      bool require_commit = true);

struct Materialized {
    std::size_t files = 0;
    std::size_t skipped = 0;  // submodules, special files: not part of a workspace
};

// Writes the source into destination, an existing empty directory. Never follows a link it
// writes and refuses entry names that would leave the directory. Throws WorkspaceSourceError, and
// MissingObjectsError when an object of the commit is not on disk.
Materialized materialize(const WorkspaceSource &source, const std::filesystem::path &destination);

}  // namespace tea::git
