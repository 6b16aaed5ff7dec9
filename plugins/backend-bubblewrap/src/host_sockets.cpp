#include "host_sockets.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tea/dirents.hpp>
#include <tea/read_all.hpp>
#include <utility>

#include "fd.hpp"

namespace tea::bwrap {
namespace {

namespace fs = std::filesystem;

// A socket bound by a relative name: /proc/net/unix shows the name as it was given, not where
// the file is.
struct RelativeSocket {
    std::string name;
    unsigned long inode = 0;  // the socket's, as /proc/PID/fd shows it ("socket:[N]")
};

void from_proc(std::set<std::string> &paths, std::vector<RelativeSocket> &relative) {
    const Fd fd{::open("/proc/net/unix", O_RDONLY | O_CLOEXEC)};
    if (fd.get() < 0) {
        return;
    }
    const std::string text = tea::read_all(fd.get());
    // Num RefCount Protocol Flags Type St Inode [Path]; the path may hold spaces.
    std::size_t line_start = text.find('\n');  // past the header
    while (line_start != std::string::npos && line_start + 1 < text.size()) {
        const std::size_t begin = line_start + 1;
        std::size_t end = text.find('\n', begin);
        if (end == std::string::npos) {
            end = text.size();
        }
        std::size_t at = begin;
        auto skip_spaces = [&] {
            while (at < end && (text[at] == ' ' || text[at] == '\t')) {
                ++at;
            }
        };
        unsigned long inode = 0;
        for (int field = 0; field < 7; ++field) {
            skip_spaces();
            const std::size_t field_start = at;
            while (at < end && text[at] != ' ' && text[at] != '\t') {
                ++at;
            }
            if (field == 6) {
                std::from_chars(text.data() + field_start, text.data() + at, inode);
            }
        }
        skip_spaces();
        if (at < end && text[at] == '/') {
            paths.emplace(text, at, end - at);
        } else if (at < end && text[at] != '@') {  // '@' marks an abstract socket: no file
            relative.push_back({text.substr(at, end - at), inode});
        }
        line_start = end < text.size() ? end : std::string::npos;
    }
}

// What a link in /proc says ("mnt:[4026531841]"), or "" when it cannot be read.
std::string link_text(const std::string &path) {
    std::array<char, 256> text{};
    const ssize_t n = ::readlink(path.c_str(), text.data(), text.size());
    return n > 0 ? std::string{text.data(), static_cast<std::size_t>(n)} : std::string{};
}

// Where each relatively bound socket lies: its name taken from the working directory of a
// process that holds it, when a socket file is there. One the runtime cannot place (its holders
// unreadable, or the file moved since) is returned with the uid of a holder, when one was seen.
std::vector<HostSocket> locate_relative(const std::vector<RelativeSocket> &relative,
                                        std::set<std::string> &paths) {
    std::vector<HostSocket> unlocated;
    if (relative.empty()) {
        return unlocated;
    }
    std::map<unsigned long, std::vector<pid_t>> holders;
    for (const auto &r : relative) {
        holders[r.inode];
    }
    std::size_t unheld = holders.size();
    const Fd proc{::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    // Read every descriptor of every process the runtime may see, but only until each socket has
    // a holder: on a busy host that is most of the cost.
    tea::dirents::for_each(proc.get(), [&](const dirent64 &process) {
        const std::string_view name{process.d_name};
        pid_t pid = 0;
        if (std::from_chars(name.data(), name.data() + name.size(), pid).ec != std::errc{} ||
            pid <= 0) {
            return true;
        }
        const std::string fd_dir = "/proc/" + std::string{name} + "/fd";
        const Fd dir{::open(fd_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
        if (dir.get() < 0) {
            return true;  // another user's process, or gone
        }
        tea::dirents::for_each(dir.get(), [&](const dirent64 &entry) {
            std::array<char, 64> target{};
            const ssize_t n = ::readlinkat(dir.get(), entry.d_name, target.data(), target.size());
            constexpr std::string_view prefix = "socket:[";
            const std::string_view text{target.data(), n > 0 ? static_cast<std::size_t>(n) : 0};
            if (text.size() <= prefix.size() + 1 || text.substr(0, prefix.size()) != prefix) {
                return true;
            }
            unsigned long inode = 0;
            std::from_chars(text.data() + prefix.size(), text.data() + text.size() - 1, inode);
            if (const auto it = holders.find(inode); it != holders.end()) {
                if (it->second.empty()) {
                    --unheld;
                }
                it->second.push_back(pid);
            }
            return true;
        });
        return unheld > 0;
    });
    const std::string own_mounts = link_text("/proc/self/ns/mnt");
    for (const auto &r : relative) {
        bool placed = false;
        uid_t owner = 0;
        bool seen = false;
        for (const pid_t pid : holders[r.inode]) {
            // A holder in another mount namespace (a container, a service with a root of its
            // own) names its directory in a tree the sandbox is not built from.
            if (link_text("/proc/" + std::to_string(pid) + "/ns/mnt") != own_mounts) {
                continue;
            }
            std::array<char, 4096> cwd{};
            const std::string link = "/proc/" + std::to_string(pid) + "/cwd";
            const ssize_t n = ::readlink(link.c_str(), cwd.data(), cwd.size() - 1);
            struct stat holder {};
            if (!seen && ::stat(("/proc/" + std::to_string(pid)).c_str(), &holder) == 0) {
                owner = holder.st_uid;
                seen = true;
            }
            if (n <= 0 || cwd[0] != '/') {
                continue;
            }
            const auto candidate =
                (fs::path{std::string{cwd.data(), static_cast<std::size_t>(n)}} / r.name)
                    .lexically_normal();
            struct stat st {};
            if (::lstat(candidate.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
                paths.insert(candidate.string());
                placed = true;
            }
        }
        if (!placed && seen) {
            unlocated.push_back(HostSocket{r.name, owner, false});
        }
    }
    return unlocated;
}

// The directories a walk leaves out, by device and inode.
using Skipped = std::set<std::pair<dev_t, ino_t>>;

// The entries a walk may still read, and whether it met one more than it could.
struct Budget {
    std::size_t left = 0;
    bool exhausted = false;
};

// What identifies a directory's content: a name is added or removed only by changing the
// directory's change and modification times.
struct DirStamp {
    std::uint64_t dev = 0;
    std::uint64_t ino = 0;
    std::int64_t ctime_s = 0;
    std::int64_t ctime_ns = 0;
    std::int64_t mtime_s = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const DirStamp &) const = default;
};

DirStamp stamp_of(const struct stat &st) {
    return {st.st_dev,          st.st_ino,         st.st_ctim.tv_sec,
            st.st_ctim.tv_nsec, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
}

// One directory as a walk found it: how many entries it counted, and the names of its sockets
// and of its subdirectories (at any depth; the walk decides how deep it goes).
struct Listing {
    DirStamp stamp;
    std::size_t entries = 0;
    std::vector<std::string> sockets;
    std::vector<std::string> dirs;
    bool operator==(const Listing &) const = default;
};

using WalkCache = std::map<std::string, Listing>;

// The cache file: a header, then per directory its path, its stamp's six numbers, its entry
// count, its socket and subdirectory counts and names. Every field ends with a NUL, which no
// path or name holds, so a hostile name (a newline, a quote, non-UTF-8) cannot forge a field.
constexpr std::string_view cache_magic = "tea-socket-walk-1";
constexpr std::size_t max_cache_bytes = std::size_t{16} << 20U;

// A listing's numbers in the file's order: its stamp, then its entry count. `visit` writes or
// reads each in turn.
template <typename L, typename Visit>
void numbers_of(L &l, Visit &&visit) {
    visit(l.stamp.dev);
    visit(l.stamp.ino);
    visit(l.stamp.ctime_s);
    visit(l.stamp.ctime_ns);
    visit(l.stamp.mtime_s);
    visit(l.stamp.mtime_ns);
    visit(l.entries);
}

std::string serialize(const WalkCache &cache) {
    std::string out{cache_magic};
    out += '\0';
    auto field = [&out](std::string_view f) {
        out += f;
        out += '\0';
    };
    auto number = [&field](auto n) { field(std::to_string(n)); };
    for (const auto &[path, l] : cache) {
        field(path);
        numbers_of(l, number);
        number(l.sockets.size());
        number(l.dirs.size());
        for (const auto &n : l.sockets) {
            field(n);
        }
        for (const auto &n : l.dirs) {
            field(n);
        }
    }
    return out;
}

// The cache a file holds; empty when it is not the user's own private regular file or does not
// parse as a whole (then nothing is taken from it, and the walk reads every directory).
WalkCache load_cache(const std::filesystem::path &file) {
    if (file.empty()) {
        return {};
    }
    const Fd fd{::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)};
    struct stat st {};
    // Only what this user alone could have written: another's file could hide a socket.
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != ::geteuid() || (st.st_mode & 0022U) != 0 ||
        static_cast<std::size_t>(st.st_size) > max_cache_bytes) {
        return {};
    }
    const std::string text = tea::read_all(fd.get());
    std::size_t at = 0;
    bool ok = true;
    auto field = [&]() -> std::string_view {
        const auto end = text.find('\0', at);
        if (end == std::string::npos) {
            ok = false;
            return {};
        }
        std::string_view f{text.data() + at, end - at};
        at = end + 1;
        return f;
    };
    auto number = [&](auto &n) {
        const auto f = field();
        const auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), n);
        ok = ok && ec == std::errc{} && p == f.data() + f.size() && !f.empty();
    };
    if (field() != cache_magic || !ok) {
        return {};
    }
    WalkCache cache;
    while (ok && at < text.size()) {
        const std::string path{field()};
        Listing l;
        std::size_t sockets = 0;
        std::size_t dirs = 0;
        numbers_of(l, number);
        number(sockets);
        number(dirs);
        // Each name takes at least two bytes: a count larger than what is left is a lie. Each
        // count is checked alone, so two that overflow their sum cannot pass as a small one.
        const std::size_t room = std::min(l.entries, (text.size() - at) / 2);
        if (!ok || path.empty() || path[0] != '/' || sockets > room || dirs > room - sockets) {
            return {};
        }
        for (std::size_t i = 0; ok && i < sockets + dirs; ++i) {
            const std::string name{field()};
            // One name of the directory: never a path, never "." or "..".
            if (name.empty() || name == "." || name == ".." ||
                name.find('/') != std::string::npos) {
                return {};
            }
            (i < sockets ? l.sockets : l.dirs).push_back(name);
        }
        cache.emplace(path, std::move(l));
    }
    return ok ? cache : WalkCache{};
}

// Best effort: written whole to <file>.new, then renamed over the file, so a reader sees the
// old file or the new one, never a part (and one that does not parse only costs a full walk).
// The .new file is taken under a lock, so two calls never write it at once.
void save_cache(const std::filesystem::path &file, const WalkCache &cache) {
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
    const auto next = file.string() + ".new";
    const Fd fd{::open(next.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)};
    struct stat held {};
    struct stat named {};
    if (fd.get() < 0 || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0 ||
        // Still the file named .new, not one another call renamed into place meanwhile.
        ::fstat(fd.get(), &held) != 0 || ::lstat(next.c_str(), &named) != 0 ||
        held.st_ino != named.st_ino || held.st_dev != named.st_dev || !S_ISREG(held.st_mode) ||
        held.st_uid != ::geteuid() || ::ftruncate(fd.get(), 0) != 0) {
        return;
    }
    const std::string text = serialize(cache);
    std::size_t done = 0;
    while (done < text.size()) {
        const auto n = ::write(fd.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            ::unlink(next.c_str());
            return;
        }
        done += static_cast<std::size_t>(n);
    }
    if (::fchmod(fd.get(), 0600) != 0 || ::rename(next.c_str(), file.c_str()) != 0) {
        ::unlink(next.c_str());
    }
}

// File systems whose change times the kernel keeps itself, by statfs magic.
bool times_kept_by_kernel(int dir_fd) {
    constexpr std::array<decltype(statfs::f_type), 4> kept{
        0xEF53,      // ext2, ext3, ext4
        0x01021994,  // tmpfs
        0x58465342,  // xfs
        0x9123683E,  // btrfs
    };
    struct statfs fs {};
    return ::fstatfs(dir_fd, &fs) == 0 &&
           std::find(kept.begin(), kept.end(), fs.f_type) != kept.end();
}

struct Walk {
    const SocketScanOptions &options;
    const Skipped &skip;
    const WalkCache &old;
    WalkCache fresh;
    Budget budget;
    std::set<std::string> paths;
    struct timespec started {};  // CLOCK_REALTIME, the clock of a file's times
    std::size_t read = 0;
    std::size_t reused = 0;
    std::map<dev_t, bool> kept_times{};  // times_kept_by_kernel, asked once per device

    [[nodiscard]] bool times_kept(int dir_fd, dev_t dev) {
        const auto [it, added] = kept_times.try_emplace(dev, false);
        if (added) {
            it->second = times_kept_by_kernel(dir_fd);
        }
        return it->second;
    }

    // Whether a directory left alone since before `settle` ahead of the walk.
    [[nodiscard]] bool settled(const DirStamp &s) const {
        auto ns = [](std::int64_t sec, std::int64_t nsec) {
            return std::chrono::nanoseconds{std::chrono::seconds{sec}} +
                   std::chrono::nanoseconds{nsec};
        };
        const auto start = ns(started.tv_sec, started.tv_nsec);
        return std::max(ns(s.ctime_s, s.ctime_ns), ns(s.mtime_s, s.mtime_ns)) <
               start - options.settle;
    }

    // The directory's listing, read with getdents64 through its descriptor: the entry types
    // come with the names, so only an entry of unknown type costs a stat. Nullopt when the
    // bound on the walk ran out in it.
    std::optional<Listing> list(int dir_fd, const DirStamp &stamp) {
        Listing l;
        l.stamp = stamp;
        ++read;
        tea::dirents::for_each(dir_fd, [&](const dirent64 &entry) {
            if (budget.left == 0) {
                budget.exhausted = true;
                return false;
            }
            --budget.left;
            ++l.entries;
            unsigned char type = entry.d_type;
            if (type == DT_UNKNOWN) {
                struct stat st {};
                if (::fstatat(dir_fd, entry.d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                    return true;
                }
                type = S_ISSOCK(st.st_mode) ? DT_SOCK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
            }
            if (type == DT_SOCK) {
                l.sockets.emplace_back(entry.d_name);
            } else if (type == DT_DIR) {
                l.dirs.emplace_back(entry.d_name);
            }
            return true;
        });
        if (budget.exhausted) {
            return std::nullopt;
        }
        return l;
    }

    // One directory and, below max_depth, its subdirectories, never following a link below
    // the top.
    void walk(int dir_fd, const std::string &dir, std::size_t depth) {
        struct stat st {};
        if (budget.exhausted || ::fstat(dir_fd, &st) != 0 ||
            skip.count({st.st_dev, st.st_ino}) != 0) {
            return;
        }
        const DirStamp stamp = stamp_of(st);
        std::optional<Listing> listing;
        const auto kept = old.find(dir);
        if (kept != old.end() && kept->second.stamp == stamp &&
            kept->second.entries <= budget.left) {
            // Unchanged since it was listed: the same entries, counted against the bound as a
            // listing would count them.
            listing = kept->second;
            budget.left -= listing->entries;
            ++reused;
        } else {
            listing = list(dir_fd, stamp);
            if (!listing) {
                return;
            }
        }
        if (settled(stamp) && times_kept(dir_fd, st.st_dev)) {
            fresh.emplace(dir, *listing);
        }
        const std::string prefix = dir.back() == '/' ? dir : dir + "/";
        for (const auto &name : listing->sockets) {
            paths.insert(prefix + name);
        }
        if (depth + 1 >= options.max_depth) {
            return;
        }
        for (const auto &name : listing->dirs) {
            const Fd child{
                ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
            if (child.get() >= 0) {  // no permission to read it: skipped, as before
                walk(child.get(), prefix + name, depth + 1);
            }
        }
    }
};

// A configured directory that is a symbolic link to another configured
// directory (/var/run -> /run): its sockets are found under the other, and a
// mask placed there is what the link shows inside the sandbox too, since the
// sandbox sees the host's / with the link in it. A second walk would only mask
// every socket twice. A bind mount of the same directory is not a link and is
// walked: a mask on one mount point would not show on the other.
bool is_link_to_walked(const fs::path &dir, const std::vector<fs::path> &directories) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) {
        return false;
    }
    std::error_code ec;
    const auto target = fs::canonical(dir, ec);
    if (ec) {
        return false;
    }
    return std::any_of(directories.begin(), directories.end(), [&](const fs::path &other) {
        struct stat other_st {};
        return other != dir && ::lstat(other.c_str(), &other_st) == 0 &&
               S_ISDIR(other_st.st_mode) && other.lexically_normal() == target;
    });
}

// Where a socket file really lies: its directory with every link on the way followed, as the host
// resolves it; nullopt when that directory is gone. The sandbox's view differs from the host's in
// the places it replaces (its own /tmp): a socket named through a link there (/tmp/x/s.sock with
// /tmp/x leading into /run) lies where the link led, and is masked there. A socket found under two
// names (/var/run and /run) is one place.
std::optional<std::string> real_place(const std::string &path) {
    const fs::path named{path};
    std::error_code ec;
    const auto dir = fs::canonical(named.parent_path(), ec);
    if (ec) {
        return std::nullopt;
    }
    return (dir / named.filename()).string();
}

}  // namespace

SocketScan scan_host_sockets(const SocketScanOptions &options, const Identity &sandbox) {
    std::set<std::string> paths;
    std::vector<RelativeSocket> relative;
    from_proc(paths, relative);
    auto unlocated = locate_relative(relative, paths);
    Skipped skip;
    for (const auto &dir : options.skip) {
        struct stat st {};
        if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            skip.emplace(st.st_dev, st.st_ino);
        }
    }
    const WalkCache old = load_cache(options.cache_file);
    Walk w{options, skip, old, {}, Budget{options.max_entries}, std::move(paths)};
    ::clock_gettime(CLOCK_REALTIME, &w.started);
    for (const auto &dir : options.directories) {
        if (is_link_to_walked(dir, options.directories)) {
            continue;
        }
        // The top itself may be a link (/var/run on a host where /run is not
        // configured): followed, as the sandbox follows it too.
        const Fd top{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
        if (top.get() >= 0) {
            w.walk(top.get(), dir.string(), 0);
        }
    }
    // Only a complete walk is kept, and only when it found something else than the file holds.
    if (!options.cache_file.empty() && !w.budget.exhausted && w.fresh != old) {
        save_cache(options.cache_file, w.fresh);
    }
    SocketScan scan;
    scan.walk_complete = !w.budget.exhausted;
    scan.directories_read = w.read;
    scan.directories_reused = w.reused;
    const uid_t self = ::getuid();
    std::set<std::string> places;
    for (const auto &named : w.paths) {
        const auto p = real_place(named);
        struct stat st {};
        // Gone, or behind a directory we cannot search: nobody in the sandbox reaches it.
        if (!p || !places.insert(*p).second || ::lstat(p->c_str(), &st) != 0 ||
            !S_ISSOCK(st.st_mode) || unreachable_ancestor(fs::path{*p}.parent_path(), sandbox)) {
            continue;
        }
        const bool mandatory =
            st.st_uid < options.system_uid_limit || st.st_uid == self || st.st_uid == sandbox.uid;
        scan.sockets.push_back(HostSocket{*p, st.st_uid, mandatory});
    }
    std::stable_partition(scan.sockets.begin(), scan.sockets.end(),
                          [](const HostSocket &s) { return s.mandatory; });
    for (auto &u : unlocated) {
        u.mandatory =
            u.owner < options.system_uid_limit || u.owner == self || u.owner == sandbox.uid;
    }
    scan.unlocated = std::move(unlocated);
    return scan;
}

}  // namespace tea::bwrap
