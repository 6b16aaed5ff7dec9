#include "fs/private_dirs.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>

#include "util/error.hpp"

namespace tea::fs {
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
            throw runtime_error("getrandom failed: " + errno_text(errno));
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

void remove_tree(const stdfs::path &path) {
    std::error_code ec;
    // A target may have left directories without write or search permission.
    for (stdfs::recursive_directory_iterator
             it{path, stdfs::directory_options::skip_permission_denied, ec},
         end;
         !ec && it != end; it.increment(ec)) {
        if (it->is_directory(ec) && !it->is_symlink(ec)) {
            ::chmod(it->path().c_str(), 0700);
        }
    }
    ::chmod(path.c_str(), 0700);
    stdfs::remove_all(path, ec);
}

int reclaim_leftovers(const stdfs::path &root) {
    int reclaimed = 0;
    std::error_code ec;
    for (stdfs::directory_iterator it{root, ec}, end; !ec && it != end; it.increment(ec)) {
        const auto name = it->path().filename().string();
        if (name.rfind("run-", 0) != 0 || it->is_symlink(ec) || !it->is_directory(ec)) {
            continue;
        }
        UniqueFd lock{::open((it->path() / "lock").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)};
        // No lock file: a run killed between mkdir and lock; a held lock: a live run.
        if (lock && ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
            continue;
        }
        remove_tree(it->path());
        ++reclaimed;
    }
    return reclaimed;
}

RunDirectory::RunDirectory(const stdfs::path &private_root) : root_(private_root) {
    path_ = root_ / ("run-" + random_token());
    if (::mkdir(path_.c_str(), 0711) != 0) {
        throw host_error("cannot create the run's private directory " + path_.string() + ": " +
                         errno_text(errno));
    }
    ::chmod(path_.c_str(), 0711);  // past the umask
    lock_.reset(
        ::open((path_ / "lock").c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!lock_ || ::flock(lock_.get(), LOCK_EX | LOCK_NB) != 0) {
        remove_tree(path_);
        throw host_error("cannot lock the run's private directory " + path_.string());
    }
}

RunDirectory::~RunDirectory() {
    remove();
}

void RunDirectory::remove() {
    if (!path_.empty()) {
        remove_tree(path_);
        path_.clear();
        lock_.reset();
    }
}

stdfs::path RunDirectory::make_directory(const std::string &prefix) {
    auto dir = path_ / (prefix + random_token());
    if (::mkdir(dir.c_str(), 0700) != 0) {
        throw host_error("cannot create " + dir.string() + ": " + errno_text(errno));
    }
    return dir;
}

}  // namespace tea::fs
