#include "git/revision.hpp"

#include <git2.h>

#include "git/git_directory.hpp"
#include "git/libgit2.hpp"

namespace tea::git {

std::string resolve_revision(const WorkspaceSource &source, const std::string &revision) {
    ensure_libgit2();
    if (!source.git) {
        throw WorkspaceSourceError("the project " + source.project_root.string() +
                                   " is in no git repository; revision '" + revision +
                                   "' names nothing");
    }
    GitPtr<git_repository, git_repository_free> repo;
    try {
        repo = open_self_contained(GitDirectory{source.worktree_git_dir, source.git_dir});
    } catch (const GitDirectoryError &e) {
        throw WorkspaceSourceError(std::string{"the project's git directory is refused: "} +
                                   e.what());
    }
    // A leading '-' would read as an option to any git the name reaches later.
    git_object *raw = nullptr;
    if (revision.empty() || revision.front() == '-' ||
        git_revparse_single(&raw, repo.get(), revision.c_str()) != 0) {
        throw UnknownRevisionError("revision '" + revision + "' names nothing your clone holds (" +
                                   last_git_error() + ")");
    }
    const GitPtr<git_object, git_object_free> object{raw};
    git_object *peeled = nullptr;
    if (git_object_peel(&peeled, object.get(), GIT_OBJECT_COMMIT) != 0) {
        throw UnknownRevisionError("revision '" + revision + "' names no commit (" +
                                   last_git_error() + ")");
    }
    const GitPtr<git_object, git_object_free> commit{peeled};
    char hex[GIT_OID_HEXSZ + 1] = {};
    git_oid_tostr(hex, sizeof hex, git_object_id(commit.get()));
    return hex;
}

}  // namespace tea::git
