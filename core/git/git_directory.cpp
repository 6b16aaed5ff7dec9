#include "git/git_directory.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <string>
#include <string_view>
#include <system_error>

#include "git/libgit2.hpp"
#include "util/fd.hpp"
#include "util/paths.hpp"

namespace tea::git {
namespace {

namespace fs = std::filesystem;

// A `.git` file, a commondir or a gitdir file is one line; a larger one is no git's.
constexpr std::size_t kLinkFileLimit = 4096;
constexpr std::size_t kConfigLimit = std::size_t{16} << 20;

[[noreturn]] void refuse(const fs::path &file, const std::string &why) {
    throw GitDirectoryError(file.string() + ": " + why);
}

fs::file_type type_of(const fs::path &path) {
    std::error_code ec;
    const auto status = fs::symlink_status(path, ec);
    if (ec && status.type() != fs::file_type::not_found) {
        refuse(path, "cannot be examined: " + ec.message());
    }
    return status.type();
}

void require_type(const fs::path &path, fs::file_type wanted, bool optional) {
    const auto type = type_of(path);
    if (type == wanted || (optional && type == fs::file_type::not_found)) return;
    if (type == fs::file_type::not_found) refuse(path, "is missing");
    // A link inside a git directory can name any file on the host, which the runtime would read
    // as its own: another repository's objects, refs or configuration.
    if (type == fs::file_type::symlink) {
        refuse(path,
               "is a symbolic link; the runtime reads a repository only from the files of its "
               "own git directory");
    }
    refuse(path,
           wanted == fs::file_type::directory ? "is not a directory" : "is not a regular file");
}

// The content of a regular file of at most limit bytes, read without following a link at its
// name and without waiting on a fifo put in its place.
std::string read_regular(const fs::path &path, std::size_t limit, const char *too_large) {
    require_type(path, fs::file_type::regular, false);
    const UniqueFd fd{::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        refuse(path, "cannot be read");
    }
    if (static_cast<std::size_t>(st.st_size) > limit) refuse(path, too_large);
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) refuse(path, "cannot be read");
        done += static_cast<std::size_t>(n);
    }
    return text;
}

std::string read_link_file(const fs::path &path) {
    return read_regular(path, kLinkFileLimit, "is larger than a git link file can be");
}

// The path a link file's line names, relative ones taken from base, resolved; as git reads it,
// trailing whitespace dropped.
fs::path named_path(const fs::path &file, std::string line, const fs::path &base) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())) != 0) {
        line.pop_back();
    }
    if (line.empty() || line.find('\n') != std::string::npos ||
        line.find('\0') != std::string::npos) {
        refuse(file, "does not name one path");
    }
    fs::path named{line};
    if (named.is_relative()) named = base / named;
    std::error_code ec;
    auto real = fs::canonical(named, ec);
    if (ec) refuse(file, "names " + named.string() + ", which cannot be resolved: " + ec.message());
    return real;
}

std::string lowercase(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

// An [include] or [includeIf] section makes git and libgit2 read another file as this one's
// configuration. Every section header starts with '[' and its name, so any "[include" in the text
// (a value that merely holds those bytes included) is refused: never a missed section.
void refuse_includes(const fs::path &config) {
    if (type_of(config) == fs::file_type::not_found) return;
    const auto text = read_regular(config, kConfigLimit, "is larger than a git configuration is");
    if (lowercase(text).find("[include") != std::string::npos) {
        refuse(config,
               "includes other files into the repository's configuration ([include] or "
               "[includeIf]); the runtime does not follow them");
    }
}

// Every entry beneath dir is a directory or a regular file: no link to another repository's
// objects or refs, no fifo or device to hang or flood the runtime's reads.
void refuse_links_beneath(const fs::path &dir) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator{dir, ec}; !ec && it != fs::end(it);
         it.increment(ec)) {
        const auto type = it->symlink_status(ec).type();
        if (ec) break;
        if (type == fs::file_type::directory || type == fs::file_type::regular) continue;
        require_type(it->path(), fs::file_type::regular, false);
    }
    if (ec) refuse(dir, "cannot be read: " + ec.message());
}

// A linked worktree's administrative directory lives at <common>/worktrees/<name>, and its
// commondir names <common>: a commondir naming anything else would borrow another repository's
// objects and refs.
fs::path worktree_common_dir(const fs::path &admin) {
    const auto commondir = admin / "commondir";
    auto named = named_path(commondir, read_link_file(commondir), admin);
    const auto expected = admin.parent_path().parent_path();
    if (admin.parent_path().filename() != "worktrees" || named != expected) {
        refuse(commondir,
               "names " + named.string() +
                   "; only a linked worktree's git directory (<repository>/worktrees/<name>) "
                   "has a commondir, and it names the repository holding it");
    }
    return named;
}

std::string config_string(const fs::path &config, const char *key) {
    refuse_includes(config);
    ensure_libgit2();
    git_config *raw = nullptr;
    if (git_config_open_ondisk(&raw, config.c_str()) != 0) {
        refuse(config, "cannot be read: " + last_git_error());
    }
    const GitPtr<git_config, git_config_free> owned{raw};
    git_buf value = GIT_BUF_INIT;
    if (git_config_get_string_buf(&value, owned.get(), key) != 0) return {};
    std::string out(value.ptr, value.size);
    git_buf_dispose(&value);
    return out;
}

// X, named by work_tree/.git's `gitdir:` line, stands for work_tree only when X names work_tree
// back: a repository elsewhere names its own work tree, never this one.
GitDirectory follow_gitdir_file(const fs::path &work_tree, const fs::path &dot_git) {
    const std::string text = read_link_file(dot_git);
    constexpr std::string_view prefix = "gitdir: ";
    if (text.compare(0, prefix.size(), prefix) != 0) {
        refuse(dot_git, "is a file that does not start with 'gitdir: '");
    }
    const auto named = named_path(dot_git, text.substr(prefix.size()), work_tree);
    // A git directory inside the work tree is one that whatever writes the work tree could make.
    if (within(named, work_tree)) {
        refuse(dot_git, "names " + named.string() +
                            ", inside the work tree; a linked worktree's or a submodule's git "
                            "directory lies outside it");
    }
    require_type(named, fs::file_type::directory, false);
    const auto foreign = [&](const std::string &what) {
        refuse(dot_git, "names " + named.string() + ", " + what +
                            ", which is neither a linked worktree's git directory whose gitdir "
                            "file names this .git nor a submodule's git directory whose "
                            "core.worktree names " +
                            work_tree.string() +
                            "; the runtime reads no other repository's history for this work "
                            "tree");
    };
    if (type_of(named / "commondir") != fs::file_type::not_found) {
        const auto common = worktree_common_dir(named);
        const auto gitdir = named / "gitdir";
        if (type_of(gitdir) == fs::file_type::not_found) foreign("whose gitdir file is missing");
        const auto back = named_path(gitdir, read_link_file(gitdir), named);
        if (back != dot_git) foreign("whose gitdir file names " + back.string());
        return {named, common};
    }
    const auto worktree = config_string(named / "config", "core.worktree");
    if (worktree.empty()) foreign("a git directory with no core.worktree");
    std::error_code ec;
    fs::path resolved{worktree};
    if (resolved.is_relative()) resolved = named / resolved;
    const auto real = fs::canonical(resolved, ec);
    if (ec || real != work_tree) foreign("whose core.worktree is " + worktree);
    return {named, named};
}

bool looks_like_git_dir(const fs::path &dir) {
    std::error_code ec;
    return fs::exists(fs::symlink_status(dir / "HEAD", ec)) &&
           fs::is_directory(dir / "objects", ec) && fs::is_directory(dir / "refs", ec);
}

}  // namespace

std::optional<GitDirectory> work_tree_git_directory(const fs::path &work_tree) {
    const auto dot_git = work_tree / ".git";
    switch (type_of(dot_git)) {
        case fs::file_type::not_found:
            return std::nullopt;
        case fs::file_type::directory:
            // A repository's own .git has no commondir; one there borrows another repository's
            // objects and refs.
            if (type_of(dot_git / "commondir") != fs::file_type::not_found) {
                refuse(dot_git / "commondir",
                       "names another git directory for this one's objects and refs; only a "
                       "linked worktree's git directory, outside its work tree, has one");
            }
            return GitDirectory{dot_git, dot_git};
        case fs::file_type::regular:
            return follow_gitdir_file(work_tree, dot_git);
        case fs::file_type::symlink:
            refuse(dot_git,
                   "is a symbolic link; a work tree's .git is its git directory or a gitdir: "
                   "file");
        default:
            refuse(dot_git, "is neither a directory nor a gitdir: file");
    }
}

GitDirectory git_directory_at(const fs::path &git_dir) {
    std::error_code ec;
    const auto real = fs::canonical(git_dir, ec);
    if (ec) refuse(git_dir, "cannot be resolved: " + ec.message());
    require_type(real, fs::file_type::directory, false);
    if (type_of(real / "commondir") == fs::file_type::not_found) return {real, real};
    return {real, worktree_common_dir(real)};
}

std::optional<EnclosingRepository> enclosing_repository(const fs::path &dir) {
    if (dir == dir.parent_path()) return std::nullopt;
    for (auto p = dir.parent_path();; p = p.parent_path()) {
        if (auto found = work_tree_git_directory(p)) {
            return EnclosingRepository{p, *found, false};
        }
        if (looks_like_git_dir(p)) {
            return EnclosingRepository{{}, {p, p}, true};
        }
        if (p == p.parent_path()) return std::nullopt;
    }
}

void check_self_contained(const GitDirectory &directory) {
    const auto &git_dir = directory.git_dir;
    const auto &common = directory.common_dir;
    require_type(git_dir, fs::file_type::directory, false);
    require_type(git_dir / "HEAD", fs::file_type::regular, false);
    if (git_dir == common) {
        if (type_of(git_dir / "commondir") != fs::file_type::not_found) {
            refuse(git_dir / "commondir", "names another git directory for this one's objects");
        }
    } else if (worktree_common_dir(git_dir) != common) {
        refuse(git_dir / "commondir", "does not name " + common.string());
    } else {
        require_type(git_dir / "refs", fs::file_type::directory, true);
        if (type_of(git_dir / "refs") == fs::file_type::directory) {
            refuse_links_beneath(git_dir / "refs");
        }
        refuse_includes(git_dir / "config.worktree");
    }
    require_type(common, fs::file_type::directory, false);
    for (const char *dir : {"objects", "refs"}) {
        require_type(common / dir, fs::file_type::directory, false);
    }
    // Alternates lend another repository's objects to this one (git clone --shared, --reference).
    for (const char *name : {"alternates", "http-alternates"}) {
        const auto file = common / "objects" / "info" / name;
        if (type_of(file) != fs::file_type::not_found) {
            refuse(file,
                   "borrows objects from another repository; the runtime reads a repository's "
                   "own objects only (git repack -a -d, then remove this file, makes them its "
                   "own)");
        }
    }
    refuse_links_beneath(common / "objects");
    refuse_links_beneath(common / "refs");
    for (const char *file : {"packed-refs", "shallow"}) {
        require_type(common / file, fs::file_type::regular, true);
    }
    refuse_includes(common / "config");
    refuse_includes(common / "config.worktree");
}

GitPtr<git_repository, git_repository_free> open_self_contained(const GitDirectory &directory) {
    check_self_contained(directory);
    ensure_libgit2();
    git_repository *raw = nullptr;
    if (git_repository_open_ext(&raw, directory.git_dir.c_str(),
                                GIT_REPOSITORY_OPEN_NO_SEARCH | GIT_REPOSITORY_OPEN_NO_DOTGIT,
                                nullptr) != 0) {
        refuse(directory.git_dir, "cannot be opened: " + last_git_error());
    }
    GitPtr<git_repository, git_repository_free> repository{raw};
    std::error_code ec;
    const auto opened = fs::canonical(git_repository_path(raw), ec);
    const auto common = fs::canonical(git_repository_commondir(raw), ec);
    if (opened != directory.git_dir || common != directory.common_dir) {
        refuse(directory.git_dir, "opens as " + opened.string() + " with the common directory " +
                                      common.string() + ", not as the runtime found it");
    }
    return repository;
}

}  // namespace tea::git
