#include "exec/idmap.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "exec/clone_child.hpp"
#include "util/error.hpp"

namespace tea::exec {
namespace {

// The child that holds the new user namespace until the parent has written its maps and opened
// it. It shares the parent's memory (CLONE_VM), so it only waits: every signal is blocked around
// the clone, and SIGKILL ends it. `arg` is the parent's pid.
int hold_namespace(void *arg) {
    // It dies with the runtime: one killed outright before it reaps the holder would leave it
    // waiting for ever, a root process holding copies of the runtime's descriptors (the call's
    // output pipes, whose open read ends keep a confinement from ending itself, and the call's
    // identity lock). Checked after arming, against a runtime that died before.
    if (::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
        ::syscall(SYS_getppid) != *static_cast<const pid_t *>(arg)) {
        ::syscall(SYS_exit, 1);
    }
    for (;;) {
        ::syscall(SYS_ppoll, nullptr, 0, nullptr, nullptr, 0);
    }
}

void write_map(pid_t pid, const char *name, const std::string &line) {
    const auto path = "/proc/" + std::to_string(pid) + "/" + name;
    const UniqueFd fd{::open(path.c_str(), O_WRONLY | O_CLOEXEC)};
    if (!fd || ::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        throw runtime_failure("cannot write " + path + " (\"" + line.substr(0, line.size() - 1) +
                              "\"): " + errno_text(errno));
    }
}

UniqueFd make_namespace(const IdMapping &m) {
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): the child's stack, never read here
    alignas(64) std::array<char, 16384> stack;
    pid_t parent = ::getpid();
    const pid_t pid =
        clone_sharing_memory(hold_namespace, &parent, CLONE_NEWUSER | CLONE_VM | SIGCHLD, stack);
    const int clone_error = errno;
    if (pid < 0) {
        throw runtime_failure("cannot make a user namespace for an idmapped mount: " +
                              errno_text(clone_error));
    }
    struct Reap {
        pid_t pid;
        std::array<char, 16384> &stack;
        ~Reap() {
            ::kill(pid, SIGKILL);
            while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
            }
            stack_returned(stack);
        }
    } const reap{pid, stack};
    write_map(pid, "uid_map", std::to_string(m.owner_uid) + " " + std::to_string(m.uid) + " 1\n");
    write_map(pid, "gid_map", std::to_string(m.owner_gid) + " " + std::to_string(m.gid) + " 1\n");
    const auto path = "/proc/" + std::to_string(pid) + "/ns/user";
    UniqueFd ns{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (!ns) {
        throw runtime_failure("cannot open " + path + ": " + errno_text(errno));
    }
    return ns;
}

}  // namespace

int mapping_namespace(const IdMapping &mapping) {
    static std::mutex lock;
    static std::map<IdMapping, UniqueFd> made;
    const std::lock_guard<std::mutex> hold{lock};
    auto &fd = made[mapping];
    if (!fd) {
        fd = make_namespace(mapping);
    }
    return fd.get();
}

DetachedTree detached_tree(int top, const IdMapping &mapping) {
    DetachedTree out;
    out.tree = UniqueFd{static_cast<int>(
        ::syscall(SYS_open_tree, top, "",
                  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH))};
    if (!out.tree) {
        throw runtime_failure("cannot copy the tree as a detached mount (open_tree): " +
                              errno_text(errno));
    }
    // Never set-user-id and no devices, whatever the tree holds: the call's view sets both again.
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    attr.userns_fd = static_cast<decltype(attr.userns_fd)>(mapping_namespace(mapping));
    if (::syscall(SYS_mount_setattr, out.tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                  sizeof attr) == 0) {
        return out;
    }
    const int error = errno;
    // The file system (or one mounted beneath the tree) does not take an idmap: the kernel
    // changes none of the tree's mounts then, and the copy stays as the disk has it.
    if (error != EINVAL && error != EPERM && error != EOPNOTSUPP && error != ENOSYS) {
        throw runtime_failure("cannot make the tree's copy idmapped (mount_setattr): " +
                              errno_text(error));
    }
    out.refusal = error;
    attr = {};
    attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if (::syscall(SYS_mount_setattr, out.tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                  sizeof attr) != 0) {
        throw runtime_failure("cannot set the tree's copy nosuid and nodev (mount_setattr): " +
                              errno_text(errno));
    }
    return out;
}

std::string filesystem_name(int top) {
    struct statfs st {};
    if (::fstatfs(top, &st) != 0) {
        return "an unknown file system (" + errno_text(errno) + ")";
    }
    struct Known {
        unsigned long magic;
        const char *name;
    };
    static constexpr std::array<Known, 21> known{{
        {EXT4_SUPER_MAGIC, "ext4"},
        {XFS_SUPER_MAGIC, "xfs"},
        {BTRFS_SUPER_MAGIC, "btrfs"},
        {TMPFS_MAGIC, "tmpfs"},
        {RAMFS_MAGIC, "ramfs"},
        {OVERLAYFS_SUPER_MAGIC, "overlay"},
        {NFS_SUPER_MAGIC, "nfs"},
        {FUSE_SUPER_MAGIC, "fuse"},
        {CIFS_SUPER_MAGIC, "cifs"},
        {SMB2_SUPER_MAGIC, "smb2"},
        {V9FS_MAGIC, "9p"},
        {CEPH_SUPER_MAGIC, "ceph"},
        {AFS_SUPER_MAGIC, "afs"},
        {0x2FC12FC1, "zfs"},
        {F2FS_SUPER_MAGIC, "f2fs"},
        {SQUASHFS_MAGIC, "squashfs"},
        {EROFS_SUPER_MAGIC_V1, "erofs"},
        {MSDOS_SUPER_MAGIC, "vfat"},
        {EXFAT_SUPER_MAGIC, "exfat"},
        {ECRYPTFS_SUPER_MAGIC, "ecryptfs"},
        {0x5346544e, "ntfs"},
    }};
    const auto type = static_cast<unsigned long>(st.f_type);
    for (const auto &k : known) {
        if (k.magic == type) {
            return k.name;
        }
    }
    std::array<char, 32> hex{};
    std::snprintf(hex.data(), hex.size(), "0x%lx", type);
    return std::string{"file system type "} + hex.data();
}

}  // namespace tea::exec
