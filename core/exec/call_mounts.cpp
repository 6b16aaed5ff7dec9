#include "exec/call_mounts.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <string>

#include "exec/clone_child.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace tea::exec {
namespace {

namespace stdfs = std::filesystem;

// What the keeper does, in order, and how far it got. It shares the runtime's memory and its
// descriptor table until it exits (CLONE_VM | CLONE_VFORK | CLONE_FILES), so it only makes system
// calls on what the runtime laid out here.
struct Keeper {
    std::vector<const char *> covers;                    // tmpfs of mode 0711
    std::vector<const char *> directories;               // made in a cover, mode 0711
    std::vector<const char *> files;                     // made in a cover, empty, mode 0444
    std::vector<std::pair<int, const char *>> attaches;  // a detached tree onto its path
    int ns = -1;                                         // the namespace, in the shared table
    const char *failed_at = nullptr;
    const char *path = nullptr;
    int error = 0;
};

int keep(void *arg) {
    auto &k = *static_cast<Keeper *>(arg);
    const auto fail = [&](const char *what, const char *path) {
        k.failed_at = what;
        k.path = path;
        k.error = errno;
        ::_exit(1);
    };
    // Nothing made here reaches the host's namespace; what the host mounts later still reaches
    // this one, as it reaches every call.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
        fail("making the call's mounts its own", "/");
    }
    for (const char *cover : k.covers) {
        if (::mount("tmpfs", cover, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                    "mode=0711,size=4096") != 0) {
            fail("covering", cover);
        }
    }
    for (const char *dir : k.directories) {
        if (::mkdir(dir, 0711) != 0 && errno != EEXIST) {
            fail("making the mount point", dir);
        }
    }
    for (const char *file : k.files) {
        const int fd = ::open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
        if (fd < 0 && errno != EEXIST) {
            fail("making the mount point", file);
        }
        if (fd >= 0) {
            ::close(fd);
        }
    }
    for (const auto &[tree, path] : k.attaches) {
        if (::syscall(SYS_move_mount, tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
            fail("attaching the lent tree at", path);
        }
    }
    k.ns = ::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (k.ns < 0) {
        fail("opening the namespace", "/proc/self/ns/mnt");
    }
    ::_exit(0);
}

std::size_t depth(const stdfs::path &p) {
    return static_cast<std::size_t>(std::distance(p.begin(), p.end()));
}

}  // namespace

std::optional<stdfs::path> unsearchable_ancestor(const stdfs::path &path, uid_t uid, gid_t gid) {
    stdfs::path at;
    const auto parent = path.parent_path();
    for (const auto &part : parent) {
        at /= part;
        struct stat st {};
        if (::stat(at.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
            return std::nullopt;
        }
        const mode_t search = st.st_uid == uid ? S_IXUSR : st.st_gid == gid ? S_IXGRP : S_IXOTH;
        if ((st.st_mode & search) == 0) {
            return at;
        }
    }
    return std::nullopt;
}

// The directories from `cover` (exclusive) down to `path`, `path` itself included unless it is
// to be a file.
void way_down(const stdfs::path &cover, const stdfs::path &path, bool last_is_directory,
              std::vector<stdfs::path> &directories) {
    stdfs::path at = cover;
    for (const auto &part : path.lexically_relative(cover)) {
        at /= part;
        if (at != path || last_is_directory) {
            directories.push_back(at);
        }
    }
}

UniqueFd call_mount_namespace(const std::vector<TreeAt> &trees, uid_t uid, gid_t gid,
                              const std::vector<stdfs::path> &covered_mounts) {
    if (trees.empty()) {
        return {};
    }
    auto ordered = trees;
    // Outer paths first: a tree's mount point may lie in a cover made for another.
    std::sort(ordered.begin(), ordered.end(),
              [](const TreeAt &a, const TreeAt &b) { return depth(a.path) < depth(b.path); });
    std::vector<stdfs::path> covers;
    std::vector<stdfs::path> directories;
    for (const auto &t : ordered) {
        const auto cover = unsearchable_ancestor(t.path, uid, gid);
        if (!cover) {
            continue;
        }
        if (std::find(covers.begin(), covers.end(), *cover) == covers.end()) {
            covers.push_back(*cover);
        }
        // The way from the cover down to the tree, made in the cover's empty file system.
        way_down(*cover, t.path, true, directories);
    }
    // A withheld path in a cover: the identity could not reach it before, and cannot now, but the
    // plan still covers it, and its mount needs a point to land on.
    std::vector<stdfs::path> files;
    for (const auto &m : covered_mounts) {
        const auto normal = m.lexically_normal();
        const auto cover = std::find_if(covers.begin(), covers.end(), [&](const stdfs::path &c) {
            return within(normal, c) && normal != c;
        });
        struct stat st {};
        if (cover == covers.end() || ::lstat(normal.c_str(), &st) != 0) {
            continue;
        }
        way_down(*cover, normal, S_ISDIR(st.st_mode), directories);
        if (!S_ISDIR(st.st_mode)) {
            files.push_back(normal);
        }
    }
    Keeper k;
    for (const auto &c : covers) {
        k.covers.push_back(c.c_str());
    }
    for (const auto &d : directories) {
        k.directories.push_back(d.c_str());
    }
    for (const auto &f : files) {
        k.files.push_back(f.c_str());
    }
    for (const auto &t : ordered) {
        k.attaches.emplace_back(t.tree, t.path.c_str());
    }
    // The keeper's stack is a stretch of this frame: this thread waits until it exits
    // (CLONE_VFORK). Left uninitialised: the keeper writes what it uses.
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init)
    alignas(64) std::array<char, std::size_t{32} * 1024> stack;
    const pid_t pid = clone_sharing_memory(
        keep, &k, CLONE_NEWNS | CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, stack);
    const int clone_error = errno;
    stack_returned(stack);
    if (pid < 0) {
        throw runtime_failure("cannot make the call's mount namespace: " + errno_text(clone_error));
    }
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (k.failed_at != nullptr) {
        throw runtime_failure(std::string{"cannot make the call's mount namespace: "} +
                              k.failed_at + " " + k.path + ": " + errno_text(k.error));
    }
    return UniqueFd{k.ns};
}

}  // namespace tea::exec
