#include "git/patch_apply.hpp"

#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>

#include "git/git_directory.hpp"
#include "git/libgit2.hpp"

namespace tea::git {
namespace {

using TreeEntry = GitPtr<git_tree_entry, git_tree_entry_free>;
using Diff = GitPtr<git_diff, git_diff_free>;

[[noreturn]] void fail(const std::string &why) {
    throw WorkspaceSourceError(why);
}

// Applying a patch stores the patched blobs: in an object store of memory placed before the
// repository's own, so the user's .git is never written (a qualification leaves the project as it
// was, and runs beside it never see its objects directory change).
void keep_writes_in_memory(git_repository *repo) {
    git_odb *odb_raw = nullptr;
    if (git_repository_odb(&odb_raw, repo) != 0) {
        fail("cannot open the project's object store: " + last_git_error());
    }
    const GitPtr<git_odb, git_odb_free> odb{odb_raw};
    git_odb_backend *memory = nullptr;
    if (git_mempack_new(&memory) != 0) fail("cannot make an object store in memory");
    // The highest priority: libgit2 writes to the first backend that can write.
    if (git_odb_add_backend(odb.get(), memory, 1000) != 0) {
        memory->free(memory);
        fail("cannot add an object store in memory: " + last_git_error());
    }
}

// The tree the project's paths are relative to: the commit's, or its subtree at the prefix.
Tree project_tree(git_repository *repo, const WorkspaceSource &source) {
    git_oid oid;
    if (git_oid_fromstr(&oid, source.commit.c_str()) != 0) fail("bad commit id " + source.commit);
    git_object *commit_raw = nullptr;
    if (git_object_lookup(&commit_raw, repo, &oid, GIT_OBJECT_COMMIT) != 0) {
        fail("cannot read commit " + source.commit + ": " + last_git_error());
    }
    const Object commit{commit_raw};
    git_object *root_raw = nullptr;
    if (git_object_peel(&root_raw, commit.get(), GIT_OBJECT_TREE) != 0) {
        fail("cannot read the tree of commit " + source.commit + ": " + last_git_error());
    }
    Tree root{reinterpret_cast<git_tree *>(root_raw)};
    if (source.prefix.empty()) return root;
    git_tree_entry *entry_raw = nullptr;
    if (git_tree_entry_bypath(&entry_raw, root.get(), source.prefix.c_str()) != 0) {
        fail("commit " + source.commit + " has no folder " + source.prefix);
    }
    const TreeEntry entry{entry_raw};
    git_tree *sub = nullptr;
    if (git_tree_lookup(&sub, repo, git_tree_entry_id(entry.get())) != 0) {
        fail("cannot read " + source.prefix + " in commit " + source.commit + ": " +
             last_git_error());
    }
    return Tree{sub};
}

PatchedFile file_after(git_repository *repo, git_index *index, const char *path) {
    PatchedFile out;
    out.path = path;
    const git_index_entry *entry = git_index_get_bypath(index, path, 0);
    if (entry == nullptr) {
        out.removed = true;
        return out;
    }
    out.link = (entry->mode & 0170000U) == 0120000U;
    out.submodule = (entry->mode & 0170000U) == 0160000U;
    out.executable = (entry->mode & 0111U) != 0;
    if (out.submodule) return out;
    git_blob *blob_raw = nullptr;
    if (git_blob_lookup(&blob_raw, repo, &entry->id) != 0) {
        fail(std::string{"cannot read the patched "} + path + ": " + last_git_error());
    }
    const Blob blob{blob_raw};
    out.content.assign(static_cast<const char *>(git_blob_rawcontent(blob.get())),
                       static_cast<std::size_t>(git_blob_rawsize(blob.get())));
    return out;
}

}  // namespace

std::vector<PatchedFile> apply_patch(const WorkspaceSource &source, const std::string &patch) {
    ensure_libgit2();
    if (!source.git) fail("a patch applies to a project in a git repository only");
    Repository repo;
    try {
        repo = open_self_contained(GitDirectory{source.worktree_git_dir, source.git_dir});
    } catch (const GitDirectoryError &e) {
        fail(std::string{"the project's git directory is refused: "} + e.what());
    }
    keep_writes_in_memory(repo.get());
    const auto tree = project_tree(repo.get(), source);
    git_diff *diff_raw = nullptr;
    if (git_diff_from_buffer(&diff_raw, patch.data(), patch.size()) != 0) {
        fail("not a patch in git's format: " + last_git_error());
    }
    const Diff diff{diff_raw};
    git_index *index_raw = nullptr;
    if (git_apply_to_tree(&index_raw, repo.get(), tree.get(), diff.get(), nullptr) != 0) {
        fail("does not apply to commit " + source.commit + ": " + last_git_error());
    }
    const Index index{index_raw};
    std::vector<PatchedFile> out;
    const auto deltas = git_diff_num_deltas(diff.get());
    for (std::size_t i = 0; i < deltas; ++i) {
        const git_diff_delta *delta = git_diff_get_delta(diff.get(), i);
        if (delta->status == GIT_DELTA_RENAMED || delta->status == GIT_DELTA_DELETED) {
            out.push_back(PatchedFile{delta->old_file.path, true, {}, false, false, false});
        }
        if (delta->status != GIT_DELTA_DELETED) {
            out.push_back(file_after(repo.get(), index.get(), delta->new_file.path));
        }
    }
    return out;
}

}  // namespace tea::git
