// The libgit2 plumbing the git pieces share: one initialisation, the last error as a sentence,
// and owning pointers that free each object with its own function.
#pragma once

#include <git2.h>

#include <memory>
#include <string>

namespace tea::git {

inline void ensure_libgit2() {
    // Initialised once and never shut down: other threads may still hold libgit2 objects.
    static const int init = git_libgit2_init();
    (void)init;
}

inline std::string last_git_error() {
    const git_error *error = git_error_last();
    return error != nullptr && error->message != nullptr ? error->message : "unknown libgit2 error";
}

template <typename T, void (*Free)(T *)>
struct GitDeleter {
    void operator()(T *p) const { Free(p); }
};
template <typename T, void (*Free)(T *)>
using GitPtr = std::unique_ptr<T, GitDeleter<T, Free>>;

using Repository = GitPtr<git_repository, git_repository_free>;
using Object = GitPtr<git_object, git_object_free>;
using Tree = GitPtr<git_tree, git_tree_free>;
using Blob = GitPtr<git_blob, git_blob_free>;
using Index = GitPtr<git_index, git_index_free>;

}  // namespace tea::git
