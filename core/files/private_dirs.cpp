#include "files/private_dirs.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <tea/dirents.hpp>
#include <vector>

#include "util/error.hpp"

namespace tea::files {
namespace {

namespace stdfs = std::filesystem;

const char *env(const char *name) {
    return std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before threads start
}

bool is_root() {
    return ::geteuid() == 0;
}

void make_dir(const stdfs::path &p, mode_t mode) {
    if (::mkdir(p.c_str(), mode) != 0 && errno != EEXIST) {
        throw host_error("cannot create the private directory " + p.string() + ": " +
                         errno_text(errno));
    }
}

}  // namespace

std::string random_token(std::size_t length) {
    static constexpr std::string_view alphabet =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string out;
    std::array<unsigned char, 64> bytes{};
    while (out.size() < length) {
        if (::getrandom(bytes.data(), bytes.size(), 0) < 0) {
            throw runtime_failure("getrandom failed: " + errno_text(errno));
        }
        for (const unsigned char b : bytes) {
            // Rejection sampling keeps every character equally likely.
            if (b < 248 && out.size() < length) {
                out += alphabet[b % alphabet.size()];
            }
        }
    }
    return out;
}

stdfs::path default_private_root() {
    if (const char *p = env("TEA_EVALUATE_PRIVATE_ROOT"); p != nullptr && p[0] == '/') {
        return p;
    }
    if (is_root()) {
        return "/var/lib/tea-evaluate";
    }
    if (const char *state = env("XDG_STATE_HOME"); state != nullptr && state[0] == '/') {
        return stdfs::path{state} / "tea-evaluate";
    }
    if (const char *home = env("HOME"); home != nullptr && home[0] == '/') {
        return stdfs::path{home} / ".local" / "state" / "tea-evaluate";
    }
    throw host_error(
        "cannot place the private root: set HOME, XDG_STATE_HOME or "
        "TEA_EVALUATE_PRIVATE_ROOT to an absolute path");
}

stdfs::path open_private_root(const stdfs::path &root) {
    std::error_code ec;
    stdfs::create_directories(root.parent_path(), ec);
    // Root's private root must let the sandbox identity pass through to the
    // directories it is handed, and must never let it list what is there.
    const mode_t mode = is_root() ? 0711 : 0700;
    make_dir(root, mode);
    struct stat st {};
    if (::lstat(root.c_str(), &st) != 0) {
        throw host_error("cannot inspect the private root " + root.string() + ": " +
                         errno_text(errno));
    }
    // Another user who made the directory first would own every run's secrets.
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
        throw host_error("the private root " + root.string() +
                         " is not a directory owned by this user; remove it or set "
                         "TEA_EVALUATE_PRIVATE_ROOT elsewhere");
    }
    if ((st.st_mode & 0022U) != 0) {
        throw host_error("the private root " + root.string() +
                         " is writable by other users; make it mode 0700 (0711 for root)");
    }
    if ((st.st_mode & 0777U) != mode) {
        ::chmod(root.c_str(), mode);
    }
    return root;
}

namespace {

// The first subdirectory (a link is not one) of the directory `dir`, read from its start, or
// nullopt when none is left; every other entry of the batches read is unlinked on the way.
// `failed` is set when the directory cannot be read or an entry cannot be removed.
std::optional<std::string> next_subdirectory(int dir, bool &failed) {
    std::optional<std::string> sub;
    bool refused = false;
    const bool read = tea::dirents::for_each(dir, [&](const dirent64 &entry) {
        bool is_dir = entry.d_type == DT_DIR;
        if (entry.d_type == DT_UNKNOWN) {
            struct stat st {};
            is_dir =
                ::fstatat(dir, entry.d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        }
        if (is_dir) {
            sub = entry.d_name;
            return false;
        }
        if (::unlinkat(dir, entry.d_name, 0) != 0 && errno != ENOENT) {
            refused = true;
            return false;
        }
        return true;
    });
    failed = !read || refused;
    return failed ? std::nullopt : sub;
}

constexpr int dir_flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// Opens the subdirectory `name` of `dir` without following a link and gives its owner every
// permission back (a target may have taken search or write away), so its entries can go.
int open_subdirectory(int dir, const char *name) {
    int fd = ::openat(dir, name, dir_flags);
    if (fd < 0 && errno == EACCES && ::fchmodat(dir, name, 0700, 0) == 0) {
        fd = ::openat(dir, name, dir_flags);
    }
    if (fd >= 0) {
        ::fchmod(fd, 0700);
    }
    return fd;
}

}  // namespace

// Depth first through descriptors, one held at a time, never following a link: a link a target
// left in its home cannot make the cleanup delete what it points to, and a tree deeper than
// PATH_MAX or the descriptor limit goes in time linear in its size (a path-based walk is
// quadratic in the depth: a target's 6,000 nested directories cost it 8 s, 200,000 hours).
void remove_tree(const stdfs::path &path) {
    int dir = ::open(path.c_str(), dir_flags);
    if (dir < 0 && errno == EACCES && ::chmod(path.c_str(), 0700) == 0) {
        dir = ::open(path.c_str(), dir_flags);
    }
    if (dir < 0) {
        ::unlink(path.c_str());  // a file or a link where the tree was: removed, not followed
        return;
    }
    ::fchmod(dir, 0700);
    struct Level {
        std::string name;  // of the directory below `parent`
        dev_t dev;         // `parent`'s identity, to check ".." against
        ino_t ino;
    };
    std::vector<Level> levels;  // from `path` down to `dir`
    for (;;) {
        bool failed = false;
        const auto sub = next_subdirectory(dir, failed);
        if (failed) {
            break;  // best effort: what is left is reclaimed by a later run
        }
        if (sub) {
            struct stat here {};
            const int child = ::fstat(dir, &here) == 0 ? open_subdirectory(dir, sub->c_str()) : -1;
            if (child < 0) {
                break;
            }
            ::close(dir);
            dir = child;
            levels.push_back(Level{*sub, here.st_dev, here.st_ino});
            continue;
        }
        if (levels.empty()) {
            break;
        }
        // Up through "..", which must be the directory we came down from: one renamed meanwhile
        // would make the next unlink remove a name somewhere else.
        const int parent = ::openat(dir, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ::close(dir);
        dir = parent;
        struct stat up {};
        if (dir < 0 || ::fstat(dir, &up) != 0 || up.st_dev != levels.back().dev ||
            up.st_ino != levels.back().ino ||
            ::unlinkat(dir, levels.back().name.c_str(), AT_REMOVEDIR) != 0) {
            break;
        }
        levels.pop_back();
    }
    if (dir >= 0) {
        ::close(dir);
    }
    if (levels.empty()) {
        ::rmdir(path.c_str());
    }
}

namespace {

// A maker of a locked directory holds its parent directory's flock shared from its mkdir until
// the directory's own lock is held (make_locked_directory), so a reclaim that gets it exclusively
// knows that a name without a lock file is a killed maker's, with no grace to wait out. Shared
// directories (the temp directory) let anyone take that lock and hold it: a maker then waits a
// bounded time and goes on without it, and a reclaim that cannot get it waits out the grace.
class MakersLock {
   public:
    explicit MakersLock(int parent) : parent_(parent) {}
    MakersLock(const MakersLock &) = delete;
    MakersLock &operator=(const MakersLock &) = delete;
    ~MakersLock() { release(); }

    // For a maker, shared.
    void share() {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{2};
        while (!(held_ = ::flock(parent_, LOCK_SH | LOCK_NB) == 0) && errno == EWOULDBLOCK &&
               std::chrono::steady_clock::now() < give_up) {
            const timespec pause{0, 1'000'000};
            ::nanosleep(&pause, nullptr);
        }
    }
    // For a reclaim, exclusive, or nothing: answers whether no maker is at work.
    bool exclude() { return held_ = ::flock(parent_, LOCK_EX | LOCK_NB) == 0; }
    void release() {
        if (held_) {
            ::flock(parent_, LOCK_UN);
            held_ = false;
        }
    }

   private:
    int parent_;
    bool held_ = false;
};

}  // namespace

int reclaim_unlocked(const stdfs::path &base, std::string_view prefix) {
    // A directory without its lock this long after it was made: its process was killed before
    // it locked it.
    constexpr auto unlocked_grace = std::chrono::seconds{60};
    const UniqueFd dir{::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (!dir) {
        return 0;
    }
    // A directory is made under "." + its name and renamed once locked (make_locked_directory),
    // and renamed to ".removed-" + its name before it is removed (remove_locked_directory): a
    // process killed in either step leaves such a name, reclaimed the same way.
    const std::string staging_prefix = "." + std::string{prefix};
    const std::string removed_prefix = ".removed-" + std::string{prefix};
    MakersLock makers{dir.get()};
    const bool no_maker = makers.exclude();
    std::vector<std::string> stale;
    tea::dirents::for_each(dir.get(), [&](const dirent64 &entry) {
        const std::string name{entry.d_name};
        struct stat st {};
        // Only a directory of this user: another user's, or a name planted in a shared temp
        // directory, is never touched.
        const bool removed = name.rfind(removed_prefix, 0) == 0;
        if ((name.rfind(prefix, 0) != 0 && name.rfind(staging_prefix, 0) != 0 && !removed) ||
            ::fstatat(dir.get(), entry.d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
            return true;
        }
        const UniqueFd lock{
            ::openat(dir.get(), (name + "/lock").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)};
        const bool past_grace = std::chrono::system_clock::now() -
                                    std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec) >
                                unlocked_grace;
        const bool held = lock && ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0;
        // A name being made is a killed maker's when no maker is at work (MakersLock), its lock
        // file made or not; otherwise it waits the grace. Any other name is stale when nobody
        // holds its lock file: a dead owner; or without one, when it was being removed (it lost
        // its lock with the rest, and nobody wants it back) or once the grace has passed.
        const bool dead_owner = name.rfind(staging_prefix, 0) == 0
                                    ? !held && (no_maker || past_grace)
                                    : (lock ? !held : removed || past_grace);
        if (dead_owner) {
            stale.push_back(name);
        }
        return true;
    });
    makers.release();  // the trees go without holding up the makers
    for (const auto &name : stale) {
        remove_tree(base / name);
    }
    return static_cast<int>(stale.size());
}

UniqueFd take_lock(const stdfs::path &dir) {
    UniqueFd lock{
        ::open((dir / "lock").c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)};
    if (lock && ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
        lock.reset();
    }
    return lock;
}

UniqueFd make_locked_directory(const stdfs::path &dir, mode_t mode) {
    const auto staging = dir.parent_path() / ("." + dir.filename().string());
    const UniqueFd parent{::open(dir.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    MakersLock making{parent.get()};
    if (parent) {
        making.share();
    }
    if (::mkdir(staging.c_str(), mode) != 0) {
        throw host_error("cannot create the private directory " + staging.string() + ": " +
                         errno_text(errno));
    }
    ::chmod(staging.c_str(), mode);  // past the umask
    UniqueFd lock = take_lock(staging);
    if (!lock) {
        const int error = errno;
        remove_tree(staging);
        throw host_error("cannot lock the private directory " + staging.string() + ": " +
                         errno_text(error));
    }
    // Shown under its name only once locked: a process killed between its mkdir and its flock
    // would otherwise leave a directory that the next run must spare for a minute as maybe live.
    // RENAME_NOREPLACE: a name planted meanwhile in a shared directory is never replaced.
    if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, dir.c_str(), RENAME_NOREPLACE) != 0) {
        const int error = errno;
        remove_tree(staging);
        throw host_error("cannot create the private directory " + dir.string() + ": " +
                         errno_text(error));
    }
    return lock;
}

void remove_locked_directory(const stdfs::path &dir, UniqueFd &lock) {
    // Out of sight under a name of its own first: a process killed while the tree goes (its lock
    // file may be among the first entries removed) would otherwise leave a name without a lock
    // that the next run must spare for a minute as maybe a live owner's.
    const auto removed = dir.parent_path() / (".removed-" + dir.filename().string());
    const bool renamed =
        ::renameat2(AT_FDCWD, dir.c_str(), AT_FDCWD, removed.c_str(), RENAME_NOREPLACE) == 0;
    remove_tree(renamed ? removed : dir);
    lock.reset();
}

int reclaim_leftovers(const stdfs::path &root) {
    return reclaim_unlocked(root, "run-");
}

RunDirectory::RunDirectory(const stdfs::path &private_root, Creation creation)
    : root_(private_root), path_(root_ / ("run-" + random_token())) {
    if (creation == Creation::now) {
        create();
    }
}

void RunDirectory::create() {
    // Searchable by all, never listable, so that the backend finds the paths below it reachable;
    // a call whose target runs as another identity hands it to that identity's group alone
    // (0710, Session::execute) before the directory's name is shown anywhere.
    lock_ = make_locked_directory(path_, 0711);
}

RunDirectory::~RunDirectory() {
    remove();
}

void RunDirectory::remove() {
    if (!path_.empty() && made()) {
        remove_locked_directory(path_, lock_);
    }
    path_.clear();
}

stdfs::path RunDirectory::make_directory(const std::string &prefix) {
    auto dir = name_directory(prefix);
    make_named(dir);
    return dir;
}

stdfs::path RunDirectory::name_directory(const std::string &prefix) const {
    return path_ / (prefix + random_token());
}

void RunDirectory::make_named(const stdfs::path &dir) {
    if (path_.empty() || dir.parent_path() != path_ || !dir.has_filename() ||
        dir.filename() == "." || dir.filename() == ".." || dir.filename() == "lock") {
        // Only a name of this run's own: anything else would make a directory elsewhere.
        throw runtime_failure("cannot make " + dir.string() + ": not a directory of the run's " +
                              (path_.empty() ? std::string{"removed directory"} : path_.string()));
    }
    if (std::find(named_made_.begin(), named_made_.end(), dir) != named_made_.end()) {
        return;
    }
    if (!made()) {
        create();
    }
    if (::mkdir(dir.c_str(), 0700) != 0) {
        throw host_error("cannot create " + dir.string() + ": " + errno_text(errno));
    }
    named_made_.push_back(dir);
}

}  // namespace tea::files
