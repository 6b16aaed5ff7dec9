#include "seccomp_rules.hpp"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <vector>

namespace tea::helper {
namespace {

// A system call refused outright. `unified` is its number where the build's libseccomp may not
// know the name yet: since Linux 5.1 a new system call has one number on every architecture the
// project builds for (asm-generic's table, shared by x86_64 and aarch64). A name neither knows
// fails the build: a rule dropped in silence is a door left open with the docs saying shut.
struct Refusal {
    const char *name = nullptr;
    int error = EPERM;
    int unified = 0;
};

constexpr std::array refusals{
    // io_uring performs file operations the audit's tracer never sees.
    Refusal{"io_uring_setup", EPERM}, Refusal{"io_uring_enter", EPERM},
    Refusal{"io_uring_register", EPERM},
    // Kernel attack surface no evaluated tool needs.
    Refusal{"perf_event_open", EPERM}, Refusal{"bpf", EPERM}, Refusal{"userfaultfd", EPERM},
    // The kernel's log holds the host's messages (addresses, other tenants' devices).
    Refusal{"syslog", EPERM},
    // The kernel keyring is shared state outside every namespace.
    Refusal{"keyctl", EPERM}, Refusal{"add_key", EPERM}, Refusal{"request_key", EPERM},
    // Mounts could uncover what the sandbox covers (the evaluation folder).
    Refusal{"mount", EPERM}, Refusal{"umount2", EPERM}, Refusal{"pivot_root", EPERM},
    Refusal{"move_mount", EPERM}, Refusal{"open_tree", EPERM}, Refusal{"fsopen", EPERM},
    Refusal{"fsconfig", EPERM}, Refusal{"fsmount", EPERM}, Refusal{"fspick", EPERM},
    Refusal{"mount_setattr", EPERM}, Refusal{"open_tree_attr", EPERM, 467},
    // Entering or making namespaces undoes the confinement's own.
    Refusal{"setns", EPERM}, Refusal{"unshare", EPERM},
    // Tracing: a process made tracee of another sandbox process (PTRACE_TRACEME) leaves the
    // audit's tracer; attaching to a sandbox process the audit does not trace (the egress relay,
    // the sandbox's init) takes over a process outside the target's filter. Reading or writing
    // another process's memory or descriptors is the same door without ptrace.
    Refusal{"ptrace", EPERM}, Refusal{"process_vm_readv", EPERM},
    Refusal{"process_vm_writev", EPERM}, Refusal{"pidfd_getfd", EPERM},
    // Privileged operations, refused outright rather than left to capability checks.
    Refusal{"init_module", EPERM}, Refusal{"finit_module", EPERM}, Refusal{"delete_module", EPERM},
    Refusal{"kexec_load", EPERM}, Refusal{"kexec_file_load", EPERM}, Refusal{"acct", EPERM},
    Refusal{"reboot", EPERM}};

// The socket families a target may make: local sockets, the two internet families (the
// network namespace has only loopback and the egress route) and routing netlink (the C
// library's address and interface queries). AF_VSOCK is not namespaced and reaches the
// hypervisor; AF_PACKET, AF_ALG, AF_KEY and the rest add kernel surface no evaluated tool needs.
constexpr std::array<std::uint32_t, 4> allowed_families{AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};

// The personality bits a target may set, alone or together: the 32-bit and old-uname personas
// that some build tools ask for, and ADDR_NO_RANDOMIZE, which ThreadSanitizer, Go's race detector
// and `setarch -R` need and which weakens only the caller's own address layout. Plus 0 and
// 0xffffffff, which only reads the current persona.
constexpr std::uint32_t persona_bits = static_cast<std::uint32_t>(PER_LINUX32) |
                                       static_cast<std::uint32_t>(UNAME26) |
                                       static_cast<std::uint32_t>(ADDR_NO_RANDOMIZE);

// One argument's masked comparison: (argument & mask) == value. libseccomp's SCMP_A0..SCMP_A5
// build the same struct as C compound literals, which C++ does not have.
constexpr scmp_arg_cmp masked_eq(unsigned arg, std::uint64_t mask, std::uint64_t value) {
    return scmp_arg_cmp{arg, SCMP_CMP_MASKED_EQ, mask, value};
}

class Rules {
   public:
    explicit Rules(scmp_filter_ctx ctx) : ctx_(ctx) {}

    void refuse(int nr, int error, const std::vector<scmp_arg_cmp> &args, const char *what) {
        if (rc_ != 0) {
            return;
        }
        rc_ = seccomp_rule_add_array(ctx_, SCMP_ACT_ERRNO(static_cast<std::uint32_t>(error)), nr,
                                     static_cast<unsigned>(args.size()), args.data());
        if (rc_ != 0) {
            failed_ = what;
        }
    }

    // Refuses the call when its 32-bit argument `arg` is none of `allowed`. A seccomp rule
    // compares an argument once, so the complement is written as bit prefixes: every block of
    // values that shares a prefix with no allowed value is one masked comparison. The kernel
    // reads these arguments as 32-bit ints, so only the low 32 bits are compared: high bits
    // cannot carry a value past the rule.
    void refuse_outside(int nr, unsigned arg, const std::vector<std::uint32_t> &allowed, int error,
                        const char *what) {
        cover(nr, arg, allowed, 0, 0, error, what);
    }

    [[nodiscard]] int rc() const { return rc_; }
    [[nodiscard]] const char *failed() const { return failed_; }

   private:
    void cover(int nr, unsigned arg, const std::vector<std::uint32_t> &allowed,
               std::uint32_t prefix, unsigned bits, int error, const char *what) {
        const std::uint32_t mask = bits == 0 ? 0U : ~std::uint32_t{0} << (32U - bits);
        bool holds_allowed = false;
        for (const std::uint32_t value : allowed) {
            holds_allowed = holds_allowed || (value & mask) == prefix;
        }
        if (!holds_allowed) {
            refuse(nr, error, {masked_eq(arg, mask, prefix)}, what);
            return;
        }
        if (bits == 32) {
            return;  // an allowed value itself
        }
        const std::uint32_t next = std::uint32_t{1} << (31U - bits);
        cover(nr, arg, allowed, prefix, bits + 1, error, what);
        cover(nr, arg, allowed, prefix | next, bits + 1, error, what);
    }

    scmp_filter_ctx ctx_;
    int rc_ = 0;
    const char *failed_ = nullptr;
};

// A system call's number for this build: libseccomp's, or the unified table's (see Refusal);
// 0 when neither knows it.
int syscall_number(const char *name, int unified) {
    const int nr = seccomp_syscall_resolve_name(name);
    return nr != __NR_SCMP_ERROR ? nr : unified;
}

// A file mode the target sets, when it makes a file or changes one, never carries S_ISUID, nor
// S_ISGID with group execute (a set-group-id program; a 2775 directory is refused as well, since
// the rule cannot tell the two apart). When the runtime is root, a lent tree is the target's
// through an idmapped mount in which its files belong on disk to the tree's owner: a setuid
// program it made there would stay the owner's (root's, for a workspace of root's) after the call,
// for any user who can reach it to run. The runtime used to give back such files with a chown,
// which cleared the bits; an idmap changes nothing after the call, so they are refused at the
// source, for every identity. Where a call cannot carry its mode in an argument (openat2's is
// behind a pointer), it answers ENOSYS and the C library falls back to openat.
void refuse_privileged_modes(Rules &rules) {
    constexpr std::uint64_t setuid = S_ISUID;
    constexpr std::uint64_t setgid_program = S_ISGID | S_IXGRP;
    struct ModeCall {
        const char *name = nullptr;
        int unified = 0;
        unsigned mode = 0;  // the argument holding the mode
        int flags = -1;     // the argument holding open's flags (the mode counts only on creation)
    };
    constexpr std::array<ModeCall, 9> calls{{{"chmod", 0, 1},
                                             {"fchmod", 0, 1},
                                             {"fchmodat", 0, 2},
                                             {"fchmodat2", 452, 2},
                                             {"mknod", 0, 1},
                                             {"mknodat", 0, 2},
                                             {"creat", 0, 1},
                                             {"open", 0, 2, 1},
                                             {"openat", 0, 3, 2}}};
    constexpr std::uint64_t tmpfile = O_TMPFILE & ~static_cast<std::uint64_t>(O_DIRECTORY);
    for (const auto &c : calls) {
        const int nr = syscall_number(c.name, c.unified);
        if (nr == __NR_SCMP_ERROR || nr == 0) {
            continue;  // not on this architecture (aarch64 has no chmod, open, creat or mknod)
        }
        for (const std::uint64_t bits : {setuid, setgid_program}) {
            const scmp_arg_cmp mode = masked_eq(c.mode, bits, bits);
            if (c.flags < 0) {
                rules.refuse(nr, EPERM, {mode}, c.name);
                continue;
            }
            const auto flags = static_cast<unsigned>(c.flags);
            for (const std::uint64_t creates : {std::uint64_t{O_CREAT}, tmpfile}) {
                rules.refuse(nr, EPERM, {masked_eq(flags, creates, creates), mode}, c.name);
            }
        }
    }
    rules.refuse(SCMP_SYS(openat2), ENOSYS, {}, "openat2");
}

int add_rules(scmp_filter_ctx ctx, std::string *failed_rule) {
    // A syscall from another ABI (int 0x80 on x86_64) would dodge every rule.
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc != 0) {
        return rc;
    }
    Rules rules{ctx};
    for (const Refusal &r : refusals) {
        const int nr = syscall_number(r.name, r.unified);
        if (nr <= 0) {
            if (failed_rule != nullptr) {
                *failed_rule = std::string{r.name} +
                               ": neither this libseccomp nor the unified table knows its number";
            }
            return -ENOENT;
        }
        rules.refuse(nr, r.error, {}, r.name);
    }
    refuse_privileged_modes(rules);
    // clone3 takes its flags through a pointer no filter can read: answer ENOSYS
    // so the C library falls back to clone, whose flags are checked below.
    rules.refuse(SCMP_SYS(clone3), ENOSYS, {}, "clone3");
    // A new namespace of any kind from clone, nested user namespaces above all; and
    // CLONE_UNTRACED, whose child the audit's tracer never follows: it would run unaudited.
    constexpr std::array<std::uint64_t, 8> clone_flags{CLONE_NEWUSER,   CLONE_NEWNS,   CLONE_NEWPID,
                                                       CLONE_NEWNET,    CLONE_NEWUTS,  CLONE_NEWIPC,
                                                       CLONE_NEWCGROUP, CLONE_UNTRACED};
    for (const std::uint64_t flag : clone_flags) {
        rules.refuse(SCMP_SYS(clone), EPERM, {masked_eq(0, flag, flag)}, "clone");
    }
    // A seccomp filter of the target's own with a user-notify listener: its answer outranks the
    // tracer's stop, so a call it lets continue runs without the audit seeing it.
    rules.refuse(SCMP_SYS(seccomp), EPERM,
                 {masked_eq(0, 0xFFFFFFFFU, SECCOMP_SET_MODE_FILTER),
                  masked_eq(1, SECCOMP_FILTER_FLAG_NEW_LISTENER, SECCOMP_FILTER_FLAG_NEW_LISTENER)},
                 "seccomp");
    // Terminal injection, and line disciplines (loading one reaches kernel code no tool needs).
    // The kernel reads the request as 32 bits, so compare only those: a request with high bits
    // set must not slip past.
    for (const unsigned long request :
         {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX),
          static_cast<unsigned long>(TIOCSETD)}) {
        rules.refuse(SCMP_SYS(ioctl), EPERM, {masked_eq(1, 0xFFFFFFFFUL, request)}, "ioctl");
    }
    const std::vector<std::uint32_t> families(allowed_families.begin(), allowed_families.end());
    rules.refuse_outside(SCMP_SYS(socket), 0, families, EAFNOSUPPORT, "socket");
    rules.refuse_outside(SCMP_SYS(socketpair), 0, families, EAFNOSUPPORT, "socketpair");
    // Netlink beyond routing reaches kernel subsystems (audit, uevents, generic families).
    rules.refuse(
        SCMP_SYS(socket), EPROTONOSUPPORT,
        {masked_eq(0, 0xFFFFFFFFU, AF_NETLINK), scmp_arg_cmp{2, SCMP_CMP_NE, NETLINK_ROUTE, 0}},
        "socket");
    // personality: READ_IMPLIES_EXEC, MMAP_PAGE_ZERO and the rest weaken the kernel's defences.
    // Allowed: 0, the persona bits, and 0xffffffff (a query). One
    // comparison a rule, so "the other 30 bits are all clear or all set" is written as a cycle:
    // bit a set while the next bit b is clear refuses. A value with some of those bits set and
    // some clear has such a pair somewhere on the cycle; all set is then refused unless the
    // persona bits are set too, which leaves only the query.
    std::vector<unsigned> cycle;
    for (unsigned bit = 0; bit < 32; ++bit) {
        if ((persona_bits & (1U << bit)) == 0) {
            cycle.push_back(bit);
        }
    }
    const auto refuse_set_clear = [&rules](unsigned set, unsigned clear) {
        const std::uint64_t a = std::uint64_t{1} << set;
        const std::uint64_t b = std::uint64_t{1} << clear;
        rules.refuse(SCMP_SYS(personality), EPERM, {masked_eq(0, a | b, a)}, "personality");
    };
    for (std::size_t i = 0; i < cycle.size(); ++i) {
        refuse_set_clear(cycle[i], cycle[(i + 1) % cycle.size()]);
    }
    for (unsigned bit = 0; bit < 32; ++bit) {
        if ((persona_bits & (1U << bit)) != 0) {
            refuse_set_clear(cycle.front(), bit);
        }
    }
    if (rules.rc() != 0 && failed_rule != nullptr) {
        *failed_rule = rules.failed();
    }
    return rules.rc();
}

}  // namespace

scmp_filter_ctx make_confinement_filter(int *error, std::string *failed_rule) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == nullptr) {
        *error = -ENOMEM;
        return nullptr;
    }
    if (const int rc = add_rules(ctx, failed_rule); rc != 0) {
        seccomp_release(ctx);
        *error = rc;
        return nullptr;
    }
    *error = 0;
    return ctx;
}

std::string compile_confinement_program(int *error, std::string *failed_rule) {
    scmp_filter_ctx ctx = make_confinement_filter(error, failed_rule);
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
