#include "host_sockets.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <set>
#include <tea/dirents.hpp>
#include <tea/read_all.hpp>
#include <utility>

namespace tea::bwrap {
namespace {

namespace fs = std::filesystem;

// A descriptor closed when it leaves scope.
class Fd {
   public:
    explicit Fd(int fd) : fd_(fd) {}
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    ~Fd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    [[nodiscard]] int get() const { return fd_; }

   private:
    int fd_;
};

void from_proc(std::set<std::string> &paths) {
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
        for (int field = 0; field < 7; ++field) {
            skip_spaces();
            while (at < end && text[at] != ' ' && text[at] != '\t') {
                ++at;
            }
        }
        skip_spaces();
        if (at < end && text[at] == '/') {  // '@' marks an abstract socket: no file
            paths.emplace(text, at, end - at);
        }
        line_start = end < text.size() ? end : std::string::npos;
    }
}

// The directories a walk leaves out, by device and inode.
using Skipped = std::set<std::pair<dev_t, ino_t>>;

// The entries a walk may still read, and whether it met one more than it could.
struct Budget {
    std::size_t left = 0;
    bool exhausted = false;
};

bool skipped(int dir_fd, const Skipped &skip) {
    struct stat st {};
    return ::fstat(dir_fd, &st) == 0 && skip.count({st.st_dev, st.st_ino}) != 0;
}

// One directory, read with getdents64 through a descriptor relative to its
// parent: the entry types come with the names, so only an entry of unknown
// type costs a stat, and no link is ever followed below the top.
void walk(int dir_fd, const std::string &dir, std::size_t depth, const SocketScanOptions &options,
          const Skipped &skip, Budget &budget, std::set<std::string> &paths) {
    if (skipped(dir_fd, skip)) {
        return;
    }
    tea::dirents::for_each(dir_fd, [&](const dirent64 &entry) {
        if (budget.left == 0) {
            budget.exhausted = true;
            return false;
        }
        --budget.left;
        unsigned char type = entry.d_type;
        if (type == DT_UNKNOWN) {
            struct stat st {};
            if (::fstatat(dir_fd, entry.d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                return true;
            }
            type = S_ISSOCK(st.st_mode) ? DT_SOCK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
        }
        // Only a socket or a directory to descend into gets a path built.
        const bool descend = type == DT_DIR && depth + 1 < options.max_depth;
        if (type != DT_SOCK && !descend) {
            return true;
        }
        std::string path = dir;
        if (path.back() != '/') {
            path += '/';
        }
        path += entry.d_name;
        if (type == DT_SOCK) {
            paths.insert(std::move(path));
            return true;
        }
        const Fd child{
            ::openat(dir_fd, entry.d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
        if (child.get() >= 0) {  // no permission to read it: skipped, as before
            walk(child.get(), path, depth + 1, options, skip, budget, paths);
        }
        return true;
    });
}

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

}  // namespace

SocketScan scan_host_sockets(const SocketScanOptions &options, const Identity &sandbox) {
    std::set<std::string> paths;
    from_proc(paths);
    Skipped skip;
    for (const auto &dir : options.skip) {
        struct stat st {};
        if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            skip.emplace(st.st_dev, st.st_ino);
        }
    }
    Budget budget{options.max_entries};
    for (const auto &dir : options.directories) {
        if (is_link_to_walked(dir, options.directories)) {
            continue;
        }
        // The top itself may be a link (/var/run on a host where /run is not
        // configured): followed, as the sandbox follows it too.
        const Fd top{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
        if (top.get() >= 0) {
            walk(top.get(), dir.string(), 0, options, skip, budget, paths);
        }
    }
    SocketScan scan;
    scan.walk_complete = !budget.exhausted;
    const uid_t self = ::getuid();
    for (const auto &p : paths) {
        struct stat st {};
        // Gone, or behind a directory we cannot search: nobody in the sandbox reaches it.
        if (::lstat(p.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) ||
            unreachable_ancestor(fs::path{p}.parent_path(), sandbox)) {
            continue;
        }
        const bool mandatory =
            st.st_uid < options.system_uid_limit || st.st_uid == self || st.st_uid == sandbox.uid;
        scan.sockets.push_back(HostSocket{p, st.st_uid, mandatory});
    }
    std::stable_partition(scan.sockets.begin(), scan.sockets.end(),
                          [](const HostSocket &s) { return s.mandatory; });
    return scan;
}

}  // namespace tea::bwrap
