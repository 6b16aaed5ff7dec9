#include "git/workspace_source.hpp"

#include <fcntl.h>
#include <git2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>

#include "git/git_directory.hpp"
#include "git/libgit2.hpp"
#include "util/fd.hpp"
#include "util/paths.hpp"

namespace tea::git {
namespace {

namespace fs = std::filesystem;

using Fd = tea::UniqueFd;

[[noreturn]] void fail(const std::string &what) {
    throw WorkspaceSourceError(what);
}

std::string errno_message(int e) {
    return std::error_code(e, std::generic_category()).message();
}

// A tree entry's name as one path component. A crafted repository could name an entry "..",
// "a/b" or ".git": any of them would write outside the workspace or plant a git directory.
bool safe_name(std::string_view name) {
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
        name.find('\0') != std::string_view::npos) {
        return false;
    }
    std::string lower{name};
    for (auto &c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return lower != ".git";
}

struct Writer {
    git_repository *repo = nullptr;
    const std::string &commit;
    const std::vector<std::string> &excluded;
    Materialized out;

    // A lookup that found nothing is an object the clone lacks; anything else is a damaged
    // repository. Only the first is the user's to repair by fetching.
    [[noreturn]] void lookup_failed(int rc, const git_tree_entry *e, const std::string &path) {
        const std::string error = last_git_error();
        if (rc == GIT_ENOTFOUND) {
            char id[GIT_OID_HEXSZ + 1] = {};
            git_oid_tostr(id, sizeof id, git_tree_entry_id(e));
            throw MissingObjectsError(commit, "the clone lacks objects of commit " + commit +
                                                  " on disk (" + path + ": object " + id + ")");
        }
        fail("cannot read " + path + ": " + error);
    }

    void write_tree(const git_tree *tree, int dirfd, const std::string &rel) {
        const std::size_t n = git_tree_entrycount(tree);
        for (std::size_t i = 0; i < n; ++i) {
            const git_tree_entry *e = git_tree_entry_byindex(tree, i);
            const std::string name = git_tree_entry_name(e);
            std::string path = rel;
            if (!path.empty()) path += '/';
            path += name;
            if (!safe_name(name)) {
                std::string what = "the commit holds an entry named '";
                what += path;
                what += "', refused";
                fail(what);
            }
            bool skip = false;
            for (const auto &x : excluded) skip = skip || x == path;
            if (skip) continue;
            switch (git_tree_entry_filemode(e)) {
                case GIT_FILEMODE_TREE: {
                    if (::mkdirat(dirfd, name.c_str(), 0755) != 0)
                        fail("cannot make " + path + ": " + errno_message(errno));
                    const Fd sub{::openat(dirfd, name.c_str(),
                                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
                    if (sub.get() < 0) fail("cannot open " + path + ": " + errno_message(errno));
                    git_tree *raw = nullptr;
                    if (const int rc = git_tree_lookup(&raw, repo, git_tree_entry_id(e)); rc != 0)
                        lookup_failed(rc, e, path);
                    const Tree subtree{raw};
                    write_tree(subtree.get(), sub.get(), path);
                    break;
                }
                case GIT_FILEMODE_BLOB:
                case GIT_FILEMODE_BLOB_EXECUTABLE:
                case GIT_FILEMODE_LINK: {
                    git_blob *raw = nullptr;
                    if (const int rc = git_blob_lookup(&raw, repo, git_tree_entry_id(e)); rc != 0)
                        lookup_failed(rc, e, path);
                    const Blob blob{raw};
                    const auto *data = static_cast<const char *>(git_blob_rawcontent(blob.get()));
                    const auto size = static_cast<std::size_t>(git_blob_rawsize(blob.get()));
                    if (git_tree_entry_filemode(e) == GIT_FILEMODE_LINK) {
                        const std::string target(data, size);
                        if (target.find('\0') != std::string::npos ||
                            ::symlinkat(target.c_str(), dirfd, name.c_str()) != 0)
                            fail("cannot make the link " + path + ": " + errno_message(errno));
                    } else {
                        const mode_t mode =
                            git_tree_entry_filemode(e) == GIT_FILEMODE_BLOB_EXECUTABLE ? 0755
                                                                                       : 0644;
                        write_file(dirfd, name, path, data, size, mode);
                    }
                    ++out.files;
                    break;
                }
                default:
                    ++out.skipped;  // a submodule: its commit is not in this repository
                    break;
            }
        }
    }

    static void write_file(int dirfd, const std::string &name, const std::string &path,
                           const char *data, std::size_t size, mode_t mode) {
        const Fd fd{::openat(dirfd, name.c_str(),
                             O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)};
        if (fd.get() < 0) fail("cannot write " + path + ": " + errno_message(errno));
        while (size > 0) {
            const ssize_t n = ::write(fd.get(), data, size);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) fail("cannot write " + path + ": " + errno_message(errno));
            data += n;
            size -= static_cast<std::size_t>(n);
        }
        // The umask may have narrowed it; the commit's mode is what the target should see.
        (void)::fchmod(fd.get(), mode);
    }
};

Materialized copy_directory(const WorkspaceSource &source, const fs::path &destination) {
    Materialized out;
    const auto &root = source.project_root;
    for (auto it = fs::recursive_directory_iterator{root}; it != fs::end(it); ++it) {
        const auto rel = it->path().lexically_relative(root);
        bool skip = rel == ".git";
        for (const auto &x : source.excluded) skip = skip || rel == fs::path{x};
        if (skip) {
            it.disable_recursion_pending();
            continue;
        }
        const auto dest = destination / rel;
        const auto status = it->symlink_status();
        if (fs::is_symlink(status)) {
            fs::copy_symlink(it->path(), dest);  // a link stays a link: never copy what it names
            ++out.files;
        } else if (fs::is_directory(status)) {
            fs::create_directory(dest);
            fs::permissions(dest, status.permissions());
        } else if (fs::is_regular_file(status)) {
            fs::copy_file(it->path(), dest);
            ++out.files;
        } else {
            ++out.skipped;  // fifos, sockets, devices
        }
    }
    return out;
}

void protect_git_paths(git_repository *repo, WorkspaceSource &source) {
    std::error_code ec;
    // A hooks directory outside the git directory: a hook planted there runs on the user's next
    // git command.
    git_config *raw = nullptr;
    if (git_repository_config_snapshot(&raw, repo) == 0) {
        const GitPtr<git_config, git_config_free> config{raw};
        git_buf value = GIT_BUF_INIT;
        if (git_config_get_path(&value, config.get(), "core.hooksPath") == 0) {
            fs::path hooks{std::string(value.ptr, value.size)};
            git_buf_dispose(&value);
            if (hooks.is_relative()) hooks = source.worktree / hooks;
            const auto real = fs::canonical(hooks, ec);
            if (!ec && fs::is_directory(real, ec) && !within(real, source.git_dir)) {
                source.protected_paths.push_back(real);
            }
        }
    }
    // A .git file names the repository the checkout belongs to; rewritten, it would point the
    // user's next git command at another repository.
    const auto dot_git = source.worktree / ".git";
    if (fs::is_regular_file(fs::symlink_status(dot_git, ec))) {
        source.protected_paths.push_back(dot_git);
    }
}

std::string refused(const GitDirectoryError &e) {
    return std::string{"the project's git directory is refused: "} + e.what();
}

// A folder the repository around it holds as a directory of its HEAD commit has that
// repository's history. A .git in it is what something writing the folder made (a target
// between two calls): taken as the folder's repository, it would pass off its own commit as the
// project's and leave the repository around it in view.
void refuse_repository_in_tracked_folder(const EnclosingRepository &enclosing,
                                         const fs::path &root) {
    git_repository *raw = nullptr;
    const auto &dir = enclosing.directory.git_dir;
    if (git_repository_open_ext(&raw, dir.c_str(),
                                GIT_REPOSITORY_OPEN_NO_SEARCH | GIT_REPOSITORY_OPEN_NO_DOTGIT,
                                nullptr) != 0) {
        fail("the repository " + dir.string() + " around the project cannot be opened (" +
             last_git_error() + ") to tell whether it holds " + root.string());
    }
    const Repository repo{raw};
    git_object *head = nullptr;
    if (git_revparse_single(&head, repo.get(), "HEAD^{tree}") != 0) return;  // no commit yet
    const Object tree{head};
    const auto folder = root.lexically_relative(enclosing.work_tree).string();
    git_object *entry = nullptr;
    if (git_object_lookup_bypath(&entry, tree.get(), folder.c_str(), GIT_OBJECT_TREE) != 0) return;
    git_object_free(entry);
    fail(refused(GitDirectoryError{
        (root / ".git").string() + ": makes a repository of a folder that the repository at " +
        enclosing.work_tree.string() + " tracks as its folder " + folder +
        "; the folder's history is that repository's (remove this .git if nothing of yours put "
        "it there)"}));
}

}  // namespace

WorkspaceSource open_workspace_source(const fs::path &project_root,
                                      const std::vector<std::string> &excluded,
                                      bool require_commit) {
    ensure_libgit2();
    WorkspaceSource source;
    std::error_code ec;
    source.project_root = fs::canonical(project_root, ec);
    if (ec) fail("the project " + project_root.string() + " cannot be opened: " + ec.message());
    source.excluded = excluded;
    const auto &root = source.project_root;
    std::optional<GitDirectory> own;
    std::optional<EnclosingRepository> enclosing;
    try {
        own = work_tree_git_directory(root);
        enclosing = enclosing_repository(root);
    } catch (const GitDirectoryError &e) {
        fail(refused(e));
    }
    if (!own && !enclosing) return source;  // no repository: a clean copy of the folder
    source.git = true;
    GitDirectory directory;
    if (own) {
        directory = *own;
        source.worktree = root;
        if (enclosing && !within(root, enclosing->directory.common_dir)) {
            if (!enclosing->inside_git_dir) refuse_repository_in_tracked_folder(*enclosing, root);
            source.enclosing_git_dir = enclosing->directory.common_dir;
        }
    } else if (enclosing->inside_git_dir) {
        source.git_dir = enclosing->directory.common_dir;
        source.worktree_git_dir = enclosing->directory.git_dir;
        if (require_commit) {
            fail("the project " + root.string() + " lies inside the git directory " +
                 source.git_dir.string() + ", which has no work tree");
        }
        return source;
    } else {
        directory = enclosing->directory;
        source.worktree = enclosing->work_tree;
        source.prefix = root.lexically_relative(source.worktree).string();
    }
    source.git_dir = directory.common_dir;
    source.worktree_git_dir = directory.git_dir;
    // exec in a subfolder of a work tree reads no history: the repository is only withheld.
    if (!source.prefix.empty() && !require_commit) return source;
    Repository repo;
    try {
        repo = open_self_contained(directory);
    } catch (const GitDirectoryError &e) {
        fail(refused(e));
    }
    const char *workdir = git_repository_workdir(repo.get());
    if (workdir == nullptr) {
        fail("the project's repository " + directory.git_dir.string() +
             " is bare; it has no work tree");
    }
    if (fs::canonical(workdir, ec) != source.worktree) {
        fail("the project's repository " + directory.git_dir.string() + " has the work tree " +
             std::string{workdir} + ", not " + source.worktree.string() + " (core.worktree)");
    }
    protect_git_paths(repo.get(), source);
    git_object *head = nullptr;
    if (git_revparse_single(&head, repo.get(), "HEAD^{commit}") != 0) {
        if (!require_commit) return source;
        fail("the project's repository " + source.worktree.string() +
             " has no commit to evaluate (HEAD: " + last_git_error() + ")");
    }
    const Object commit{head};
    char hex[GIT_OID_HEXSZ + 1] = {};
    git_oid_tostr(hex, sizeof hex, git_object_id(commit.get()));
    source.commit = hex;
    return source;
}

Materialized materialize(const WorkspaceSource &source, const fs::path &destination) {
    ensure_libgit2();
    if (!source.git) {
        try {
            return copy_directory(source, destination);
        } catch (const fs::filesystem_error &e) {
            fail(std::string{"cannot copy the project: "} + e.what());
        }
    }
    Repository repo;
    try {
        repo = open_self_contained(GitDirectory{source.worktree_git_dir, source.git_dir});
    } catch (const GitDirectoryError &e) {
        fail(refused(e));
    }
    git_oid oid;
    if (git_oid_fromstr(&oid, source.commit.c_str()) != 0) fail("bad commit id " + source.commit);
    git_object *commit_raw = nullptr;
    if (git_object_lookup(&commit_raw, repo.get(), &oid, GIT_OBJECT_COMMIT) != 0)
        fail("cannot read commit " + source.commit + ": " + last_git_error());
    const Object commit{commit_raw};
    git_object *root_raw = nullptr;
    if (const int rc = git_object_peel(&root_raw, commit.get(), GIT_OBJECT_TREE); rc != 0) {
        if (rc == GIT_ENOTFOUND) {
            throw MissingObjectsError(
                source.commit,
                "the clone lacks objects of commit " + source.commit + " on disk (its root tree)");
        }
        fail("cannot read the tree of " + source.commit + ": " + last_git_error());
    }
    Object tree{root_raw};
    if (!source.prefix.empty()) {
        git_object *sub = nullptr;
        if (git_object_lookup_bypath(&sub, tree.get(), source.prefix.c_str(), GIT_OBJECT_TREE) !=
            0) {
            fail("the project folder " + source.prefix + " is not in commit " + source.commit +
                 " (commit it first)");
        }
        tree.reset(sub);
    }
    const Fd dir{::open(destination.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (dir.get() < 0) fail("cannot open " + destination.string() + ": " + errno_message(errno));
    Writer writer{repo.get(), source.commit, source.excluded, {}};
    writer.write_tree(reinterpret_cast<const git_tree *>(tree.get()), dir.get(), "");
    return writer.out;
}

}  // namespace tea::git
