// The target's private git repository: the evaluated commit's history without the evaluation
// folder.
//
// A confined target must be able to run `git log`, `git blame`, `git describe --tags` and the
// like over the project's history, but it must never read the grading material that lives in the
// evaluation folder, not even in an old commit. The project's own git directory is therefore
// withheld from the target, and the target's checkout points at a repository built here instead.
//
// How the folder is hidden while every commit id stays the same
// ---------------------------------------------------------------
// A commit id is the hash of the commit's bytes, which name the root tree id, whose bytes name the
// evaluation folder's tree id. Rewriting any of these would change every commit id, so nothing is
// rewritten: commits and trees are carried byte for byte. What changes is which objects exist.
// The folder's trees, and every tree and blob reachable only through them, are left out of the
// private object database, and for each tree id T that the folder had in the history the private
// repository holds a replace ref `refs/replace/<T>` pointing at the empty tree. Git consults
// replace refs on every object read by default, so `git show HEAD:.tea` lists nothing and
// `git log -p`, `git grep`, `git blame` and `git diff` treat the folder as empty in every commit,
// while the commits themselves are untouched. A reader that turns replacement off
// (`GIT_NO_REPLACE_OBJECTS`, `--no-replace-objects`) gets git's missing-object error, never the
// content, because the content is simply not there. `git fsck` reports the folder's trees as
// missing; no command a target runs to read history depends on fsck.
//
// The alternative considered was grafting: a replacement commit per commit whose tree omits the
// folder. It needs one ref and one rewritten root tree per commit (100,000 for a long history)
// instead of one ref per distinct folder tree, `git cat-file -p HEAD` then shows a different tree
// id than the project has, and `HEAD:.tea` becomes an error instead of an empty folder.
//
// Two limits follow from replacing by object id and withholding by path:
//  - a directory elsewhere in the history whose tree is identical to one of the folder's trees
//    (same id) reads as empty too, since a replace ref applies to an id wherever it appears;
//    the object itself is still carried, because the spec keeps whatever a non-withheld path
//    needs;
//  - the folder is withheld at the paths given, so a folder that lived under another path in
//    older commits (it was moved) stays readable there; list the old path too to withhold it.
// A withheld path that names a file rather than a folder is replaced by the empty blob; the
// checkout leaves it out, so `git status` there reports it deleted.
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace tea::git {

// Raised when the private repository cannot be built or attached; the message names the
// project repository and the commit (or the checkout), so the caller can refuse the run with it.
class PrivateRepositoryError : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
};

struct PrivateRepositoryRequest {
    // A work tree, whose .git is taken by git_directory.hpp's rules, or a git directory; either
    // way refused unless it holds its own objects (check_self_contained).
    std::filesystem::path project_repository;
    std::string commit;                       // a revision or a full commit id
    std::vector<std::string> withheld_paths;  // repository-relative folders, e.g. ".tea"
    std::filesystem::path destination;        // must not exist yet
};

struct PrivateRepositoryResult {
    std::string commit_id;  // the evaluated commit, as the project names it
    std::size_t commits = 0;
    std::size_t trees = 0;
    std::size_t blobs = 0;
    std::size_t tags = 0;  // tag refs carried, lightweight and annotated
    // Objects the history names that the project does not hold on disk (a partial or shallow
    // clone). They are never fetched; a git command that needs one fails with git's own error.
    std::vector<std::string> missing_objects;
    bool reused_from_cache = false;
};

// Builds a bare repository at request.destination holding the evaluated commit's history minus
// the withheld folders: one pack, HEAD detached at the commit, the project's tags that point into
// the history, replace refs that make each withheld folder read as an empty tree, and no
// branches, remotes or partial-clone settings. Builds into a temporary sibling and renames it into
// place, so on failure nothing is left at the destination.
//
// With a non-empty cache_directory, a repository built earlier for the same project repository,
// commit, withheld paths and tag tips is reused (its pack hard-linked when the file system allows)
// and a fresh build is stored there. The cache directory must be private to the runtime: whatever
// it holds is handed to targets.
PrivateRepositoryResult build_private_repository(const PrivateRepositoryRequest &request,
                                                 const std::filesystem::path &cache_directory = {});

// Turns checkout_dir (absent or empty) into a checkout of the private repository's HEAD: writes
// the files of the commit except the withheld folders, an index that matches them, and a `.git`
// file naming the private repository, whose configuration becomes non-bare with checkout_dir as
// its work tree. `git status` in the checkout is clean. One private repository serves one
// checkout. A target running as another user needs the two owned by it (or git's safe.directory),
// since git refuses a repository another user owns.
void attach_worktree(const std::filesystem::path &checkout_dir,
                     const std::filesystem::path &private_repository);

// Makes the private repository describe work_tree, an existing checkout of the same commit that
// stays as it is (exec's workspace, used in place): an index of HEAD's files except the withheld
// folders, and the configuration of a non-bare repository with work_tree as its work tree. No file
// of work_tree is written, not even a `.git`: the caller shows the repository to the target at
// work_tree/.git. `git status` there lists what the work tree changed since HEAD.
void attach_in_place(const std::filesystem::path &work_tree,
                     const std::filesystem::path &private_repository);

}  // namespace tea::git
