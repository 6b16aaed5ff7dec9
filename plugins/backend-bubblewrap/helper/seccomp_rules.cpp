#include "seccomp_rules.hpp"

#include <errno.h>
#include <linux/sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>

namespace tea::helper {
namespace {

// Syscalls refused with EPERM, each for the door it would open.
constexpr std::array<const char *, 28> refused{
    // io_uring performs file operations the audit's tracer never sees.
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    // Kernel attack surface no evaluated tool needs.
    "perf_event_open", "bpf", "userfaultfd",
    // The kernel keyring is shared state outside every namespace.
    "keyctl", "add_key", "request_key",
    // Mounts could uncover what the sandbox covers (the evaluation folder).
    "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr",
    // Entering or making namespaces undoes the confinement's own.
    "setns", "unshare",
    // Privileged operations, refused outright rather than left to capability checks.
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "acct",
    "reboot"};

int add_rules(scmp_filter_ctx ctx) {
    // A syscall from another ABI (int 0x80 on x86_64) would dodge every rule.
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    for (const char *name : refused) {
        const int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR) {
            continue;  // not a syscall on this architecture
        }
        if (rc == 0) {
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
        }
    }
    // clone3 takes its flags through a pointer no filter can read: answer ENOSYS
    // so the C library falls back to clone, whose flags are checked below.
    if (rc == 0) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    }
    // A new namespace of any kind from clone, nested user namespaces above all.
    constexpr std::array<unsigned long, 7> namespace_flags{
        CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,   CLONE_NEWNET,
        CLONE_NEWUTS,  CLONE_NEWIPC, CLONE_NEWCGROUP};
    for (const unsigned long flag : namespace_flags) {
        if (rc == 0) {
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                  SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
        }
    }
    // Terminal injection. The kernel reads the request as 32 bits, so compare
    // only those: a request with high bits set must not slip past.
    for (const unsigned long request :
         {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
        if (rc == 0) {
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                                  SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFUL, request));
        }
    }
    return rc;
}

}  // namespace

scmp_filter_ctx make_confinement_filter(int *error) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == nullptr) {
        *error = -ENOMEM;
        return nullptr;
    }
    if (const int rc = add_rules(ctx); rc != 0) {
        seccomp_release(ctx);
        *error = rc;
        return nullptr;
    }
    *error = 0;
    return ctx;
}

std::string compile_confinement_program(int *error) {
    scmp_filter_ctx ctx = make_confinement_filter(error);
    if (ctx == nullptr) {
        return {};
    }
    const int fd = ::memfd_create("tea-seccomp-bpf", MFD_CLOEXEC);
    if (fd < 0) {
        *error = -errno;
        seccomp_release(ctx);
        return {};
    }
    *error = seccomp_export_bpf(ctx, fd);
    seccomp_release(ctx);
    std::string bpf;
    std::array<char, 4096> buffer{};
    if (*error == 0 && ::lseek(fd, 0, SEEK_SET) == 0) {
        for (ssize_t n = 0; (n = ::read(fd, buffer.data(), buffer.size())) > 0;) {
            bpf.append(buffer.data(), static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    return bpf;
}

}  // namespace tea::helper
