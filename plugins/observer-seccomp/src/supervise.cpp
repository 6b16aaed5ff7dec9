// TEA_SECCOMP_NONCE=N tea-seccomp-supervise --record PATH [--target-start PATH --start-kind
//                                            target|launcher] -- PROGRAM ARGS...
//
// The seccomp observer's supervisor: the first process of an audited call. Its child sets
// no_new_privs, installs the observer's filter (filter_gen.cpp) with a user-notification listener,
// hands the listener over and runs the plan's program. The supervisor serves every notification
// until the last filtered process is gone, then writes the call's record (record.hpp) and ends as
// its child ended.
//
// Before the first exec of the target start (and, for a launcher, until that process's next
// exec), every call runs as asked and nothing is recorded: that is the confinement's trusted
// set-up. After it, every open and every call that names a file is performed by the supervisor,
// as the process's identity, inside the process's own root, and its result handed back
// (SECCOMP_IOCTL_NOTIF_ADDFD for a descriptor): what is recorded is what the process got. An exec
// runs as asked and is recorded from the process's executable once it has happened.
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <tea/send_descriptors.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

#include "listener_handoff.hpp"
#include "observer_program.hpp"
#include "record.hpp"

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1UL
#endif
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif
#ifndef PIDFD_SIGNAL_THREAD
#define PIDFD_SIGNAL_THREAD (1UL << 0)
#endif

namespace {

namespace so = tea::seccomp_observer;

constexpr std::size_t kPathMax = 4096;
constexpr std::size_t kMaxDistinct = std::size_t{1} << 20;
// The bytes of distinct accesses kept: a target naming a million distinct 4 KiB paths would
// otherwise grow the supervisor, which stands outside the sandbox and its memory budget, by
// gigabytes (and the document collect makes must stay under the host's 64 MiB). Past it, an access
// is counted and the call is incomplete.
constexpr std::size_t kMaxKeptBytes = std::size_t{32} << 20;
constexpr std::size_t kMaxDirentBytes = std::size_t{1} << 20;
// How long the supervisor waits, once its child has ended, for the call's last processes.
constexpr int kOutliveGraceMs = 500;
// The flags open(2) takes that openat2 checks: open ignores any other bit, openat2 refuses it.
// (__O_TMPFILE holds O_DIRECTORY, O_SYNC holds O_DSYNC, and O_LARGEFILE is forced on here.)
constexpr unsigned kOpenFlags = O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND |
                                O_NONBLOCK | O_SYNC | FASYNC | O_DIRECT | O_NOFOLLOW | O_NOATIME |
                                O_CLOEXEC | O_PATH | __O_TMPFILE;

// Whether open flags make a file: O_CREAT, or O_TMPFILE whole. The C library's __O_TMPFILE holds
// O_DIRECTORY, so testing any of its bits would take every O_DIRECTORY open for a creation.
constexpr bool will_create(std::uint64_t flags) {
    return (flags & O_CREAT) != 0 || (flags & __O_TMPFILE) == __O_TMPFILE;
}

int g_listener = -1;
volatile pid_t g_child = 0;

void forward(int sig) {
    if (g_child > 0) {
        ::kill(g_child, sig);
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers

class Fd {
   public:
    Fd() = default;
    explicit Fd(int fd) : fd_{fd} {}
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    Fd(Fd &&o) noexcept : fd_{o.release()} {}
    Fd &operator=(Fd &&o) noexcept {
        if (this != &o) {
            reset(o.release());
        }
        return *this;
    }
    ~Fd() { reset(); }
    [[nodiscard]] int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }
    void reset(int fd = -1) {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_ = fd;
    }

   private:
    int fd_ = -1;
};

std::string proc(pid_t pid, std::string_view rest) {
    std::string out = "/proc/" + std::to_string(pid);
    if (!rest.empty()) {
        out += '/';
        out.append(rest);
    }
    return out;
}

std::string read_link(const std::string &path) {
    std::string out(kPathMax, '\0');
    const ssize_t n = ::readlink(path.c_str(), out.data(), out.size());
    if (n < 0) {
        return {};
    }
    out.resize(static_cast<std::size_t>(n));
    return out;
}

// A small file under a directory descriptor.
std::string read_small_file_at(int dirfd, const char *name) {
    const int fd = ::openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return {};
    }
    std::string out(4096, '\0');
    std::size_t got = 0;
    for (;;) {
        const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
        if (n <= 0) {
            break;
        }
        got += static_cast<std::size_t>(n);
        if (got == out.size()) {
            out.resize(out.size() * 2);
        }
    }
    ::close(fd);
    out.resize(got);
    return out;
}

std::string read_small_file(const std::string &path) {
    return read_small_file_at(AT_FDCWD, path.c_str());
}

std::string joined(std::string_view base, std::string_view name) {
    while (name.size() >= 2 && name.substr(0, 2) == "./") {
        name.remove_prefix(2);
    }
    if (name.empty() || name == ".") {
        return std::string{base};
    }
    if (name[0] == '/') {
        return std::string{name};
    }
    std::string out{base};
    if (out.empty() || out.back() != '/') {
        out += '/';
    }
    out.append(name);
    return out;
}

// A lookup kept beneath a directory (RESOLVE_IN_ROOT, RESOLVE_BENEATH) that meets ".." fails with
// EAGAIN when any rename or mount happens on the machine meanwhile: the kernel cannot tell the
// ".." stayed beneath. Retried, as openat2(2) advises: a sandbox set up beside the call would
// otherwise make the process's own opens fail where the kernel's own open never does. Bounded,
// and never for a process that asked RESOLVE_CACHED, whose EAGAIN is the answer it asked for.
long openat2_call(int dirfd, const std::string &path, const open_how &how) {
    constexpr int kRetries = 64;
    const bool scoped = (how.resolve & (RESOLVE_IN_ROOT | RESOLVE_BENEATH)) != 0 &&
                        (how.resolve & RESOLVE_CACHED) == 0;
    for (int attempt = 0;; ++attempt) {
        const long fd = ::syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how);
        if (fd >= 0 || errno != EAGAIN || !scoped || attempt == kRetries) {
            return fd;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The notification being served

struct Request {
    seccomp_notif *n = nullptr;
    [[nodiscard]] pid_t pid() const { return static_cast<pid_t>(n->pid); }
    [[nodiscard]] int nr() const { return n->data.nr; }
    [[nodiscard]] std::uint64_t arg(int i) const { return n->data.args[i]; }
    [[nodiscard]] int fd_arg(int i) const { return static_cast<int>(n->data.args[i]); }
};

bool id_valid(const Request &r) {
    return ::ioctl(g_listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &r.n->id) == 0;
}

// Whether the answer reached the process (ENOENT: it was killed meanwhile).
bool respond(const Request &r, std::int64_t val, int error, std::uint32_t flags) {
    seccomp_notif_resp resp{};
    resp.id = r.n->id;
    resp.val = val;
    resp.error = error == 0 ? 0 : -error;
    resp.flags = flags;
    return ::ioctl(g_listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0;
}

void respond_continue(const Request &r) {
    respond(r, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
}
bool respond_error(const Request &r, int error) {
    return respond(r, -1, error == 0 ? EIO : error, 0);
}
void respond_value(const Request &r, std::int64_t value) {
    respond(r, value, 0, 0);
}

// Reads a NUL-terminated string from the process's memory, a page at a time (a later page may
// be unmapped: the string must end before it). Faults the pages in as the kernel's own copy
// would. 0 or an errno.
int read_string(pid_t pid, std::uint64_t addr, std::string &out) {
    out.clear();
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    std::array<char, kPathMax> buf{};
    while (out.size() < kPathMax) {
        const std::uint64_t at = addr + out.size();
        const std::size_t want = std::min<std::uint64_t>(page - (at % page), kPathMax - out.size());
        iovec local{buf.data(), want};
        iovec remote{reinterpret_cast<void *>(at), want};  // NOLINT(performance-no-int-to-ptr)
        const ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n <= 0) {
            return EFAULT;
        }
        const auto *nul =
            static_cast<const char *>(std::memchr(buf.data(), 0, static_cast<std::size_t>(n)));
        if (nul != nullptr) {
            out.append(buf.data(), static_cast<std::size_t>(nul - buf.data()));
            return 0;
        }
        out.append(buf.data(), static_cast<std::size_t>(n));
    }
    return ENAMETOOLONG;
}

int read_bytes(pid_t pid, std::uint64_t addr, void *to, std::size_t size) {
    iovec local{to, size};
    iovec remote{reinterpret_cast<void *>(addr), size};  // NOLINT(performance-no-int-to-ptr)
    const ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    return n == static_cast<ssize_t>(size) ? 0 : EFAULT;
}

// Writes into the memory of the process that asked, through its mem file opened before its
// notification is checked: written by its number after the check, a process that died
// meanwhile would have its successor's memory written (a host process's, as the supervisor).
int write_bytes(const Request &r, std::uint64_t addr, const void *from, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const int mem = ::open(proc(r.pid(), "mem").c_str(), O_WRONLY | O_CLOEXEC);
    if (mem < 0) {
        return ESRCH;
    }
    if (!id_valid(r)) {
        ::close(mem);
        return ESRCH;
    }
    const auto offset = static_cast<off_t>(addr);
    const ssize_t n = offset < 0 ? -1 : ::pwrite(mem, from, size, offset);
    ::close(mem);
    return n == static_cast<ssize_t>(size) ? 0 : EFAULT;
}

// ---------------------------------------------------------------------------------------------
// The process's identity, taken on for each operation performed on its behalf

struct Identity {
    bool privileged = false;  // the supervisor runs as root: it switches identities
    gid_t my_groups_storage[NGROUPS_MAX]{};
    int my_groups = 0;
    __user_cap_data_struct my_caps[2]{};
    ino_t my_userns = 0;
};

Identity g_id;

// Takes on the process's file-system identity (fsuid, fsgid, groups, effective capabilities)
// and its umask; restored when it goes out of scope. Unprivileged, the supervisor already is the
// process's uid on the host (its namespace maps no other), and only the umask is taken. When it
// fails, nothing may be done on the process's behalf.
class AsProcess {
   public:
    AsProcess(const Request &r, bool creates) {
        if (!g_id.privileged && !creates) {
            return;
        }
        // The process's /proc directory is held before its notification is checked: read after
        // the check by its number, a process that died meanwhile would lend the identity of
        // whichever took its pid (a root process's fsuid and capabilities).
        const int dir = ::open(proc(r.pid(), "").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0 || !id_valid(r)) {
            if (dir >= 0) {
                ::close(dir);
            }
            failed_ = true;
            return;
        }
        const auto status = read_small_file_at(dir, "status");
        struct stat ns {};
        const bool ns_known = ::fstatat(dir, "ns/user", &ns, 0) == 0;
        ::close(dir);
        if (status.empty()) {
            failed_ = true;
            return;
        }
        auto field = [&status](std::string_view name) -> std::string_view {
            const auto at = status.find(name);
            if (at == std::string::npos) {
                return {};
            }
            const auto start = at + name.size();
            const auto end = status.find('\n', start);
            return std::string_view{status}.substr(start, end - start);
        };
        if (creates) {
            const auto umask_text = std::string{field("\nUmask:\t")};
            if (!umask_text.empty()) {
                old_umask_ =
                    ::umask(static_cast<mode_t>(std::strtoul(umask_text.c_str(), nullptr, 8)));
                umask_set_ = true;
            }
        }
        if (!g_id.privileged) {
            return;
        }
        // The fourth number of Uid: and Gid: is the file-system one.
        auto fourth = [](std::string_view line) -> long {
            std::string text{line};
            long values[4]{-1, -1, -1, -1};
            (void)std::sscanf(text.c_str(), "%ld %ld %ld %ld", &values[0], &values[1], &values[2],
                              &values[3]);
            return values[3];
        };
        const long fsuid = fourth(field("\nUid:\t"));
        const long fsgid = fourth(field("\nGid:\t"));
        if (fsuid < 0 || fsgid < 0) {
            failed_ = true;
            return;
        }
        std::vector<gid_t> groups;
        {
            std::string text{field("\nGroups:\t")};
            char *p = text.data();
            for (;;) {
                char *end = nullptr;
                const unsigned long g = std::strtoul(p, &end, 10);
                if (end == p) {
                    break;
                }
                groups.push_back(static_cast<gid_t>(g));
                p = end;
            }
        }
        std::uint64_t caps = 0;
        {
            std::string text{field("\nCapEff:\t")};
            caps = std::strtoull(text.c_str(), nullptr, 16);
        }
        // Capabilities held in another user namespace give nothing here: a process that is root
        // in its own namespace must not open, through the supervisor, what the host denies it.
        if (!ns_known || ns.st_ino != g_id.my_userns) {
            caps = 0;
        }
        switched_ = true;
        (void)::syscall(SYS_setgroups, groups.size(), groups.data());
        (void)::setfsgid(static_cast<gid_t>(fsgid));
        (void)::setfsuid(static_cast<uid_t>(fsuid));
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct data[2]{g_id.my_caps[0], g_id.my_caps[1]};
        data[0].effective = static_cast<std::uint32_t>(caps) & data[0].permitted;
        data[1].effective = static_cast<std::uint32_t>(caps >> 32) & data[1].permitted;
        (void)::syscall(SYS_capset, &header, data);
    }
    AsProcess(const AsProcess &) = delete;
    AsProcess &operator=(const AsProcess &) = delete;
    ~AsProcess() {
        if (switched_) {
            __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
            __user_cap_data_struct data[2]{g_id.my_caps[0], g_id.my_caps[1]};
            (void)::syscall(SYS_capset, &header, data);
            (void)::setfsuid(0);
            (void)::setfsgid(0);
            (void)::syscall(SYS_setgroups, g_id.my_groups, g_id.my_groups_storage);
        }
        if (umask_set_) {
            ::umask(old_umask_);
        }
    }
    [[nodiscard]] bool failed() const { return failed_; }

   private:
    bool failed_ = false;
    bool switched_ = false;
    bool umask_set_ = false;
    mode_t old_umask_ = 0;
};

// ---------------------------------------------------------------------------------------------
// procfs, as the process may read it

// Whether a descriptor is a file or directory of a procfs.
bool on_procfs(int fd) {
    struct statfs fs {};
    return ::fstatfs(fd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
}

// Where a descriptor of a procfs lies: outside every process's directory and every namespace's
// (/proc/meminfo, /proc/cpuinfo, the root itself), in the asking process's own (which the kernel
// always lets a process read), or elsewhere (another process's, /proc/sys, /proc/sysvipc). In the
// first two neither the supervisor's ownership of the sandbox's user namespace nor its own
// namespaces change the answer, and they are used without a child of their own (a fork per open,
// which a call at its process budget would see fail). Judged by the path the kernel gives the
// descriptor in the process's mount namespace, where procfs is at /proc, and the process's thread
// group's number in its own pid namespace; any other answer counts as another process's.
enum class ProcEntry : std::uint8_t { global, own, other };
ProcEntry procfs_entry(int fd, pid_t pid);

// A forked child's answer to the supervisor over their socket: a number, then after a NUL the
// bytes it read or named, and a descriptor when `fd` is one. Ends the child.
[[noreturn]] void answer_and_exit(int sock, long number, const std::string &bytes, int fd) {
    std::string message = std::to_string(number) + '\0' + bytes;
    iovec data{message.data(), message.size()};
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int))> control{};
    msghdr m{};
    m.msg_iov = &data;
    m.msg_iovlen = 1;
    if (fd >= 0) {
        m.msg_control = control.data();
        m.msg_controllen = control.size();
        cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    _exit(::sendmsg(sock, &m, MSG_NOSIGNAL) > 0 ? 0 : 1);
}

// The answer answer_and_exit sent: whether one came, its number and bytes (at most `max_bytes`),
// and its descriptor (close-on-exec), or -1.
struct ChildAnswer {
    bool came = false;
    long number = 0;
    std::string bytes;
    int fd = -1;
};
ChildAnswer receive_answer(int sock, std::size_t max_bytes = kPathMax) {
    std::string buf(max_bytes + 32, '\0');
    iovec data{buf.data(), buf.size()};
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int))> control{};
    msghdr m{};
    m.msg_iov = &data;
    m.msg_iovlen = 1;
    m.msg_control = control.data();
    m.msg_controllen = control.size();
    ssize_t n = -1;
    do {
        n = ::recvmsg(sock, &m, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    } while (n < 0 && errno == EINTR);
    ChildAnswer out;
    if (cmsghdr *c = CMSG_FIRSTHDR(&m); n > 0 && c != nullptr && c->cmsg_type == SCM_RIGHTS) {
        std::memcpy(&out.fd, CMSG_DATA(c), sizeof out.fd);
    }
    if (n <= 0) {
        return out;
    }
    buf.resize(static_cast<std::size_t>(n));
    const auto nul = buf.find('\0');
    out.came = true;
    out.number = std::strtol(buf.c_str(), nullptr, 10);
    out.bytes = nul == std::string::npos ? std::string{} : buf.substr(nul + 1);
    return out;
}

// What an operation made without the supervisor's standing answered: a value (a descriptor, a
// length, or -errno), and the bytes it read.
struct Unowned {
    long value = -EIO;
    std::string bytes;
};

// The namespaces a procfs lookup is made in: procfs answers /proc/sys/net/..., /proc/sys/kernel/
// shm*, /proc/sys/fs/mqueue/..., /proc/sys/user/... and /proc/sysvipc/* from the opener's network,
// IPC and user namespaces, fixed when the file is opened; the cgroup and UTS ones are joined as
// well, so that nothing of the supervisor's own is left for an opener's answer.
struct Namespaces {
    static constexpr std::array<std::pair<const char *, int>, 4> kJoined{
        {{"net", CLONE_NEWNET},
         {"ipc", CLONE_NEWIPC},
         {"uts", CLONE_NEWUTS},
         {"cgroup", CLONE_NEWCGROUP}}};
    Fd user;
    std::array<Fd, kJoined.size()> joined;
    bool same = false;  // every one of them is the supervisor's own
};

ino_t ns_inode(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

ino_t own_ns_inode(const char *name) {
    struct stat st {};
    return ::stat((std::string{"/proc/self/ns/"} + name).c_str(), &st) == 0 ? st.st_ino : 0;
}

// The process's namespaces, held before its notification is checked (a pid reused meanwhile
// lends nothing); `ok` is false when one could not be held.
Namespaces process_namespaces(const Request &r, bool &ok) {
    Namespaces ns;
    ns.user.reset(::open(proc(r.pid(), "ns/user").c_str(), O_RDONLY | O_CLOEXEC));
    for (std::size_t i = 0; i < Namespaces::kJoined.size(); ++i) {
        ns.joined.at(i).reset(
            ::open(proc(r.pid(), std::string{"ns/"} + Namespaces::kJoined.at(i).first).c_str(),
                   O_RDONLY | O_CLOEXEC));
    }
    ok = ns.user.get() >= 0 && id_valid(r) &&
         std::all_of(ns.joined.begin(), ns.joined.end(), [](const Fd &f) { return f.get() >= 0; });
    if (!ok) {
        return ns;
    }
    ns.same = ns_inode(ns.user.get()) == g_id.my_userns;
    for (std::size_t i = 0; i < Namespaces::kJoined.size() && ns.same; ++i) {
        ns.same = ns_inode(ns.joined.at(i).get()) == own_ns_inode(Namespaces::kJoined.at(i).first);
    }
    return ns;
}

// In a forked child: joins the process's namespaces, each through the user namespace that owns
// it (setns into a network or IPC namespace needs CAP_SYS_ADMIN over it, which the supervisor's
// uid has as the owner of the sandbox's user namespace), then the process's user namespace, and
// keeps no capability there. Where the user namespace stays the supervisor's, the capabilities
// the supervisor has taken on for the process stay.
bool join_namespaces(const Namespaces &ns) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct taken[2]{};
    if (::syscall(SYS_capget, &header, taken) != 0) {
        return false;
    }
    bool moved = false;
    for (std::size_t i = 0; i < Namespaces::kJoined.size(); ++i) {
        const auto &[name, type] = Namespaces::kJoined.at(i);
        const int fd = ns.joined.at(i).get();
        if (ns_inode(fd) == own_ns_inode(name)) {
            continue;
        }
        const Fd owner{::ioctl(fd, NS_GET_USERNS)};
        if (owner.get() < 0) {
            return false;
        }
        if (ns_inode(owner.get()) != own_ns_inode("user")) {
            if (::setns(owner.get(), CLONE_NEWUSER) != 0) {
                return false;
            }
            moved = true;
        }
        if (::setns(fd, type) != 0) {
            return false;
        }
    }
    if (ns_inode(ns.user.get()) != own_ns_inode("user")) {
        if (::setns(ns.user.get(), CLONE_NEWUSER) != 0) {
            return false;
        }
        moved = true;
    }
    __user_cap_data_struct none[2]{};
    return ::syscall(SYS_capset, &header, moved ? none : taken) == 0;
}

// Runs `op` in a forked child that has joined the process's namespaces and dropped every
// capability in its user namespace, keeping the file-system identity the supervisor has taken on.
// The supervisor's effective uid owns that namespace (bwrap made it as that uid), which grants it
// every capability there, and procfs's ptrace checks (another process's maps, smaps, exe, cwd,
// fd...) would pass for it where the process itself is refused (the sandbox's undumpable
// holder); and procfs answers some files from the opener's namespaces (Namespaces). `op` returns
// a descriptor when `sends_fd`, else a length of `bytes` (at most `max_bytes`) or -errno.
template <typename Op>
Unowned without_ownership(const Namespaces &ns, Op op, bool sends_fd,
                          std::size_t max_bytes = kPathMax) {
    std::array<int, 2> sv{};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv.data()) != 0) {
        return {-errno, {}};
    }
    Fd mine{sv[0]};
    const pid_t child = ::fork();
    if (child < 0) {
        ::close(sv[1]);
        return {-EAGAIN, {}};
    }
    if (child == 0) {
        ::close(sv[0]);
        std::string bytes;
        const long value = join_namespaces(ns) ? op(bytes) : -EACCES;
        answer_and_exit(sv[1], value, bytes, sends_fd && value >= 0 ? static_cast<int>(value) : -1);
    }
    ::close(sv[1]);
    const ChildAnswer got = receive_answer(mine.get(), max_bytes);
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    Unowned out;
    if (!got.came) {
        return out;
    }
    out.value = got.number;
    out.bytes = got.bytes;
    if (sends_fd && out.value >= 0) {
        out.value = got.fd >= 0 ? got.fd : -EIO;
    } else if (got.fd >= 0) {
        ::close(got.fd);
    }
    return out;
}

// A procfs path looked up again, as the process's open, in a child that has joined its
// namespaces without the supervisor's ownership of them: the descriptor, or -errno. A reopen of
// the supervisor's descriptor would keep what its own lookup found (the host's network and IPC
// settings, a file's answers formatted for its user namespace).
long open_unowned(const Namespaces &ns, int at, const std::string &path, const open_how &how) {
    const Unowned got = without_ownership(
        ns,
        [&](std::string &) -> long {
            const long fd = openat2_call(at, path, how);
            return fd < 0 ? -errno : fd;
        },
        true);
    return got.value;
}

// Whether a path that failed to open leads into a procfs: the nearest of its directories that
// opens is on one. The lookup that failed was the supervisor's, in its namespaces; a sysctl of
// the process's network namespace alone (an interface the sandbox has) is not found there.
bool ends_in_procfs(int at, std::string path, const open_how &how) {
    for (;;) {
        const auto end = path.find_last_not_of('/');
        const auto slash = end == std::string::npos ? std::string::npos : path.rfind('/', end);
        path = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
        open_how h{};
        h.flags = O_PATH | O_CLOEXEC;
        h.resolve = how.resolve;
        const Fd dir{static_cast<int>(openat2_call(at, path, h))};
        if (dir.get() >= 0) {
            return on_procfs(dir.get());
        }
        if (path == "." || path == "/") {
            return false;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The record

struct Event {
    int pid = 0;
    std::uint64_t count = 0;
};

class Record {
   public:
    void add(int pid, std::string_view syscall, std::string_view asked, std::string_view resolved,
             std::string_view access, bool ok, std::string_view error, std::string_view named,
             std::string_view unverified) {
        std::string key;
        for (std::string_view f :
             {syscall, asked, resolved, access, ok ? std::string_view{"1"} : std::string_view{"0"},
              error, named, unverified}) {
            so::append_field(key, f);
        }
        auto it = events_.find(key);
        if (it != events_.end()) {
            ++it->second.count;
            return;
        }
        if (events_.size() >= kMaxDistinct || kept_bytes_ + key.size() > kMaxKeptBytes) {
            ++overflow_;
            return;
        }
        kept_bytes_ += key.size();
        order_.push_back(&events_.emplace(std::move(key), Event{pid, 1}).first->first);
    }

    void reason(const std::string &r) {
        if (reasons_.find(r) == std::string::npos) {
            reasons_ += reasons_.empty() ? "" : "; ";
            reasons_ += r;
        }
    }

    [[nodiscard]] std::string text(const std::string &nonce, bool target_started,
                                   std::uint64_t notifications) {
        if (overflow_ > 0) {
            reason(std::to_string(overflow_) + " accesses beyond " + std::to_string(kMaxDistinct) +
                   " distinct ones (or " + std::to_string(kMaxKeptBytes >> 20) +
                   " MiB of them) were not kept");
        }
        std::string out;
        so::append_field(out, so::kRecordMagic);
        so::append_field(out, nonce);
        for (const std::string *key : order_) {
            const auto &e = events_.at(*key);
            so::append_field(out, "e");
            so::append_field(out, std::to_string(e.pid));
            out += *key;
            so::append_field(out, std::to_string(e.count));
        }
        so::append_field(out, "end");
        so::append_field(out, reasons_.empty() ? "1" : "0");
        so::append_field(out, reasons_);
        so::append_field(out, target_started ? "1" : "0");
        so::append_field(out, std::to_string(notifications));
        return out;
    }

   private:
    std::unordered_map<std::string, Event> events_;
    std::vector<const std::string *> order_;  // the keys of events_, in their first order
    std::size_t kept_bytes_ = 0;
    std::uint64_t overflow_ = 0;
    std::string reasons_;
};

Record g_record;

std::string_view open_access(std::uint64_t flags) {
    if ((flags & O_PATH) != 0) {
        return "other";  // a handle that reads nothing: a metadata probe
    }
    if (will_create(flags)) {
        return "create";
    }
    if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0) {
        return "write";
    }
    return "read";
}

std::string errno_name(int error) {
    const char *name = ::strerrorname_np(error);
    return name != nullptr ? name : "E" + std::to_string(error);
}

// ---------------------------------------------------------------------------------------------
// Resolving a path as the process would, inside its own root

// A path of the process's descriptor links (/proc/self/..., /dev/fd/N, /dev/stdin...): opening
// them inside the process's root would need procfs's magic links, which RESOLVE_IN_ROOT refuses,
// and the supervisor is not in the process's pid namespace. They are reopened through the
// supervisor's own procfs, under the process's host pid.
struct Mapped {
    enum Kind : std::uint8_t { kPlain, kHostProc, kCwd, kRoot, kTargetProc } kind = kPlain;
    std::string path;  // kHostProc: under /proc/PID; kCwd/kRoot: the rest; kTargetProc: after
                       // /proc/NSPID/
    bool thread = false;
};

// Whether a path has a ".." component.
bool has_dot_dot(std::string_view path) {
    std::size_t start = 0;
    while (start <= path.size()) {
        const auto end = std::min(path.find('/', start), path.size());
        if (path.substr(start, end - start) == "..") {
            return true;
        }
        start = end + 1;
    }
    return false;
}

Mapped map_links(std::string_view path) {
    std::string p{path};
    // procfs's own links to the reader's entries: followed inside the process's root, "self" would
    // be the supervisor, unknown to the process's procfs.
    for (const std::string_view name : {"/proc/net", "/proc/mounts"}) {
        if (p == name ||
            (p.size() > name.size() && p.rfind(name, 0) == 0 && p[name.size()] == '/')) {
            p = "/proc/self/" + p.substr(6);
            break;
        }
    }
    if (p.rfind("/dev/fd/", 0) == 0) {
        p = "/proc/self/fd/" + p.substr(8);
    } else if (p == "/dev/fd") {
        p = "/proc/self/fd";
    } else {
        static constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kStd{
            {{"/dev/stdin", "0"}, {"/dev/stdout", "1"}, {"/dev/stderr", "2"}}};
        for (const auto &[name, fd] : kStd) {
            if (p == name ||
                (p.size() > name.size() && p.rfind(name, 0) == 0 && p[name.size()] == '/')) {
                p = "/proc/self/fd/" + std::string{fd} + p.substr(name.size());
                break;
            }
        }
    }
    Mapped m;
    std::string rest;
    if (p.rfind("/proc/self/", 0) == 0) {
        rest = p.substr(11);
    } else if (p == "/proc/self") {
        rest = "";
    } else if (p.rfind("/proc/thread-self/", 0) == 0) {
        rest = p.substr(18);
        m.thread = true;
    } else if (p == "/proc/thread-self") {
        m.thread = true;
    } else {
        m.path = std::move(p);
        return m;
    }
    while (!rest.empty() && rest[0] == '/') {
        rest.erase(0, 1);
    }
    auto first = rest.substr(0, rest.find('/'));
    auto after = rest.size() > first.size() ? rest.substr(first.size() + 1) : std::string{};
    if (first == "cwd") {
        m.kind = Mapped::kCwd;
        m.path = after.empty() ? "." : after;
    } else if (first == "root") {
        m.kind = Mapped::kRoot;
        m.path = "/" + after;
    } else if ((first.empty() || first == "fd" || first == "exe" || first == "map_files" ||
                first == "ns") &&
               !has_dot_dot(rest)) {
        // A ".." after these would climb the supervisor's procfs to another host process's
        // root (/proc/self/ns/../../PID/root/...): such a path is resolved in the process's own
        // procfs instead, below, where it leads nowhere but there.
        m.kind = Mapped::kHostProc;
        m.path = rest;
    } else {
        m.kind = Mapped::kTargetProc;
        m.path = rest;
    }
    return m;
}

// The path of the process's view that `path` (absolute, in that view) leads to when a link on
// its way leads into the process's own procfs entries (/etc/mtab -> ../proc/self/mounts), for
// map_links to map; nullopt when none does. Followed by the supervisor's lookup, "self" is the
// supervisor, which the process's procfs does not know. The links are read as the process, from
// its root; `follow_last` is whether the last name's link is followed too.
std::optional<std::string> through_links_to_own_proc(const Request &r, int root,
                                                     std::string_view path, bool follow_last) {
    constexpr int kMaxLinks = 40;  // the kernel's own limit on links in one lookup
    std::deque<std::string> rest;
    auto push_front = [&rest](std::string_view text) {
        std::vector<std::string> names;
        std::size_t start = 0;
        while (start <= text.size()) {
            const auto end = std::min(text.find('/', start), text.size());
            if (end > start) {
                names.emplace_back(text.substr(start, end - start));
            }
            start = end + 1;
        }
        rest.insert(rest.begin(), names.begin(), names.end());
    };
    push_front(path);
    if (rest.empty()) {
        return std::nullopt;
    }
    // Most names not found are simply absent from a directory that is there (a search through
    // PATH or sys.path): that directory opened, its lookup crossed no link into procfs (the
    // supervisor's "self" would have failed it), and only a link as the last name can lead on.
    {
        std::string parent;
        for (std::size_t i = 0; i + 1 < rest.size(); ++i) {
            parent.append("/").append(rest[i]);
        }
        open_how h{};
        h.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
        h.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
        const Fd dir{static_cast<int>(openat2_call(root, parent.empty() ? "/" : parent, h))};
        struct stat st {};
        if (dir.get() >= 0 && !on_procfs(dir.get()) &&
            (::fstatat(dir.get(), rest.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
             !S_ISLNK(st.st_mode))) {
            return std::nullopt;
        }
    }
    AsProcess as{r, false};
    if (as.failed()) {
        return std::nullopt;
    }
    std::string done;  // the names resolved so far, none of them a link ("" is the root)
    int links = 0;
    while (!rest.empty()) {
        const std::string name = std::move(rest.front());
        rest.pop_front();
        if (name == ".") {
            continue;
        }
        if (name == "..") {
            done.erase(std::min(done.rfind('/'), done.size()));
            continue;
        }
        std::string candidate = done;
        candidate.append("/").append(name);
        if (map_links(candidate).kind != Mapped::kPlain) {
            std::string out = candidate;
            for (const auto &n : rest) {
                out.append("/").append(n);
            }
            return out;
        }
        if (rest.empty() && !follow_last) {
            return std::nullopt;
        }
        open_how h{};
        h.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
        h.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
        const Fd at{static_cast<int>(openat2_call(root, candidate, h))};
        struct stat st {};
        if (at.get() < 0 || ::fstat(at.get(), &st) != 0) {
            return std::nullopt;
        }
        if (!S_ISLNK(st.st_mode)) {
            done = candidate;
            continue;
        }
        std::string target(kPathMax, '\0');
        const ssize_t n = ::readlinkat(at.get(), "", target.data(), target.size());
        if (++links > kMaxLinks || n <= 0) {
            return std::nullopt;
        }
        target.resize(static_cast<std::size_t>(n));
        if (target[0] == '/') {
            done.clear();
        }
        push_front(target);
    }
    return std::nullopt;
}

// The process's pid in its own pid namespace (the last of NSpid:), and its thread group's.
bool namespace_pids(pid_t pid, std::string &ns_pid, std::string &ns_tgid) {
    const auto status = read_small_file(proc(pid, "status"));
    auto last = [&status](std::string_view name) -> std::string {
        const auto at = status.find(name);
        if (at == std::string::npos) {
            return {};
        }
        const auto start = at + name.size();
        const auto end = status.find('\n', start);
        auto line = status.substr(start, end == std::string::npos ? end : end - start);
        const auto tab = line.find_last_of("\t ");
        return tab == std::string::npos ? line : line.substr(tab + 1);
    };
    ns_pid = last("\nNSpid:");
    ns_tgid = last("\nNStgid:");
    return !ns_pid.empty() && !ns_tgid.empty();
}

// The first name after /proc/ of a path in the process's view ("" for /proc itself, nullopt for a
// path elsewhere), and whether it is a process's number.
std::optional<std::string_view> proc_first_name(std::string_view path) {
    if (path == "/proc") {
        return std::string_view{};
    }
    constexpr std::string_view kProc = "/proc/";
    if (path.substr(0, kProc.size()) != kProc) {
        return std::nullopt;
    }
    path.remove_prefix(kProc.size());
    return path.substr(0, path.find('/'));
}
bool is_number(std::string_view name) {
    return !name.empty() &&
           std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Whether a procfs directory, by its path in the process's view, is one of a process's own
// (/proc/N/..., listing its descriptors or tasks), which no namespace of the lister's changes: the
// listing every spawn's close of its descriptors makes is not worth a fork.
bool process_directory(std::string_view path) {
    const auto first = proc_first_name(path);
    return first && is_number(*first);
}

ProcEntry procfs_entry(int fd, pid_t pid) {
    std::array<char, 4096> buf{};
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = ::readlink(link.c_str(), buf.data(), buf.size() - 1);
    const auto first =
        n > 0 ? proc_first_name({buf.data(), static_cast<std::size_t>(n)}) : std::nullopt;
    if (!first) {
        return ProcEntry::other;
    }
    if (!is_number(*first)) {
        // Looked up, or answered, in the opener's namespaces (network and IPC sysctls, System V
        // objects, keys): the process's, never the supervisor's.
        constexpr std::array<std::string_view, 4> kNamespaced{"sys", "sysvipc", "keys",
                                                              "key-users"};
        return std::find(kNamespaced.begin(), kNamespaced.end(), *first) == kNamespaced.end()
                   ? ProcEntry::global
                   : ProcEntry::other;
    }
    std::string ns_pid;
    std::string ns_tgid;
    return namespace_pids(pid, ns_pid, ns_tgid) && *first == ns_tgid ? ProcEntry::own
                                                                     : ProcEntry::other;
}

// Where a path begins for the process: its root, its working directory or one of its
// descriptors, opened O_PATH through the supervisor's procfs; and that place's path.
struct Base {
    Fd fd;             // when opened for this operation
    int at = -1;       // the descriptor to resolve from: fd's, or the process's cached root
    std::string path;  // as the supervisor's procfs shows it
};

// The roots of the call's processes, kept between their opens: each open would otherwise reopen
// /proc/PID/root. An entry is used only while its thread lives (its pidfd is not readable): a
// thread's number reused by another would otherwise get the first one's root. A call that
// changes a root or a mount namespace in the judged phase (chroot, pivot_root, setns, unshare)
// turns the cache off for the rest of the call: its effect on the threads sharing the caller's
// root is not followed.
struct CachedRoot {
    Fd root;
    Fd pidfd;
};
std::unordered_map<pid_t, CachedRoot> g_roots;
bool g_roots_off = false;
constexpr std::size_t kMaxCachedRoots = 4096;

bool thread_alive(int pidfd) {
    pollfd p{pidfd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
}

int open_base(const Request &r, const std::string &link, Base &out, bool want_path) {
    out.fd.reset(::open(link.c_str(), O_PATH | O_CLOEXEC));
    out.at = out.fd.get();
    if (out.fd.get() < 0) {
        return errno;
    }
    if (want_path) {
        out.path = read_link(link);
    }
    // A process that ended, its pid reused, would have its successor's root opened.
    if (!id_valid(r)) {
        return ESRCH;
    }
    return 0;
}

// The process's root, from the cache when its entry still holds.
int open_root(const Request &r, Base &out) {
    const pid_t pid = r.pid();
    if (!g_roots_off) {
        if (auto it = g_roots.find(pid); it != g_roots.end()) {
            if (thread_alive(it->second.pidfd.get())) {
                out.at = it->second.root.get();
                return 0;
            }
            g_roots.erase(it);
        }
    }
    if (const int e = open_base(r, proc(pid, "root"), out, false); e != 0) {
        return e;
    }
    if (g_roots_off) {
        return 0;
    }
    Fd pidfd{static_cast<int>(::syscall(SYS_pidfd_open, pid, PIDFD_THREAD))};
    // The pidfd is the thread that asked only if it still waits for the answer.
    if (pidfd.get() < 0 || !id_valid(r)) {
        return 0;
    }
    if (g_roots.size() >= kMaxCachedRoots) {
        g_roots.clear();
    }
    Fd root{::fcntl(out.at, F_DUPFD_CLOEXEC, 0)};
    if (root.get() >= 0) {
        g_roots[pid] = CachedRoot{std::move(root), std::move(pidfd)};
    }
    return 0;
}

// The supervisor's own procfs (the host's), by its device.
dev_t g_host_proc_dev = 0;

bool in_host_procfs_dir(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == g_host_proc_dev;
}

// Whether an open descriptor is of /dev/tty (character device 5:0), which the kernel turns into
// the opener's own controlling terminal.
bool is_controlling_terminal_node(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(5, 0);
}

// Opens `path` as the process named it relative to `dirfd`, with `how`, inside the process's
// root: the file descriptor, or -errno. `asked` gets the path made absolute.
long open_as_process(const Request &r, int dirfd, const std::string &path, open_how how,
                     std::string &asked) {
    const pid_t pid = r.pid();
    const bool creates = will_create(how.flags);
    const std::uint64_t target_resolve = how.resolve;
    auto base_link = [&](int fd) {
        return fd == AT_FDCWD ? proc(pid, "cwd") : proc(pid, "fd/" + std::to_string(fd));
    };
    // `own`: the path is the process's own /proc entry, which it may always read.
    auto open_once = [&](int at, const std::string &p, open_how h, bool own) -> long {
        AsProcess as{r, creates};
        if (as.failed()) {
            return -ESRCH;
        }
        const long fd = openat2_call(at, p, h);
        const int error = fd < 0 ? errno : 0;
        // Another process's procfs entry opened with the supervisor's standing: a target would
        // read the maps of the sandbox's undumpable holder, or another process's, that the kernel
        // refuses it. And procfs looks some files up in the opener's namespaces: a target would
        // read the host's network settings and interfaces (/proc/sys/net), its System V IPC
        // objects (/proc/sysvipc) and limits, through the supervisor's lookup.
        const bool procfs =
            fd >= 0 ? on_procfs(static_cast<int>(fd)) &&
                          procfs_entry(static_cast<int>(fd), r.pid()) == ProcEntry::other
                    : error == ENOENT && !own && ends_in_procfs(at, p, h);
        if (own || !procfs) {
            return fd < 0 ? -error : fd;
        }
        bool held = false;
        const Namespaces ns = process_namespaces(r, held);
        if (held && ns.same) {
            return fd < 0 ? -error : fd;  // the supervisor has taken on the process's standing
        }
        if (fd >= 0) {
            ::close(static_cast<int>(fd));
        }
        return held ? open_unowned(ns, at, p, h) : -ESRCH;
    };
    auto run = [&](int at, const std::string &p, open_how h, bool own = false) -> long {
        const long fd = open_once(at, p, h, own);
        // /dev/tty opens the opener's controlling terminal: here the supervisor's (or its
        // child's, reached by a link flipped between their lookups), the terminal tea-evaluate
        // runs on, which a target would write to (or read keystrokes from) past the runtime. The
        // process, which starts in a session of its own, has none: ENXIO.
        if (fd >= 0 && is_controlling_terminal_node(static_cast<int>(fd))) {
            ::close(static_cast<int>(fd));
            return -ENXIO;
        }
        return fd;
    };
    // The process asked to stay beneath its directory (or inside it as a root): that is exact.
    if ((target_resolve & (RESOLVE_BENEATH | RESOLVE_IN_ROOT)) != 0) {
        Base base;
        if (const int e = open_base(r, base_link(dirfd), base, true); e != 0) {
            return -(e == ENOENT && dirfd != AT_FDCWD ? EBADF : e);
        }
        asked = joined(base.path, path);
        return run(base.at, path, how);
    }
    const Mapped m =
        path.empty() || path[0] != '/' ? Mapped{Mapped::kPlain, path, false} : map_links(path);
    asked = path;
    // The path after /proc/self/ (or /proc/thread-self/), opened in the process's own procfs.
    auto in_target_proc = [&]() -> long {
        std::string ns_pid;
        std::string ns_tgid;
        if (!namespace_pids(pid, ns_pid, ns_tgid)) {
            return -ESRCH;
        }
        const std::string inside = m.thread ? "/proc/" + ns_tgid + "/task/" + ns_pid + "/" + m.path
                                            : "/proc/" + ns_tgid + "/" + m.path;
        Base root;
        if (const int e = open_root(r, root); e != 0) {
            return -e;
        }
        open_how h = how;
        h.resolve |= RESOLVE_IN_ROOT;
        // A ".." leaves the process's own directory for another's (/proc/self/../1/maps).
        return run(root.at, inside, h, !has_dot_dot(m.path));
    };
    // A name that was not found because a link on its way leads into the process's own procfs
    // entries: opened by the path the link leads to, as the process names them.
    auto through_own_proc = [&](int root, const std::string &view_path) -> long {
        const bool follow_last =
            (how.flags & O_NOFOLLOW) == 0 && (how.flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
        const auto led = (target_resolve & RESOLVE_NO_SYMLINKS) != 0
                             ? std::nullopt
                             : through_links_to_own_proc(r, root, view_path, follow_last);
        if (!led || map_links(*led).kind == Mapped::kPlain) {
            return -ENOENT;
        }
        std::string led_asked;
        return open_as_process(r, AT_FDCWD, *led, how, led_asked);
    };
    switch (m.kind) {
        case Mapped::kHostProc: {
            // The final name may be a magic link (fd/N, exe): followed as the process's open
            // would follow it, through the supervisor's procfs.
            const auto slash = m.path.find('/', m.path.rfind("fd/", 0) == 0 ? 3 : 0);
            if (m.path.rfind("fd/", 0) == 0 && slash != std::string::npos) {
                // fd/N/more: beneath the directory at N.
                Base base;
                if (const int e = open_base(r, proc(pid, m.path.substr(0, slash)), base, false);
                    e != 0) {
                    return -e;
                }
                open_how h = how;
                h.resolve |= RESOLVE_BENEATH;
                return run(base.at, m.path.substr(slash + 1), h);
            }
            // Beneath the process's /proc directory, held before its notification is checked:
            // opened by its number after the check, a process that died meanwhile would have
            // its successor's descriptor opened (and truncated, for an O_TRUNC).
            Base dir;
            if (const int e = open_base(r, proc(pid, ""), dir, false); e != 0) {
                return -e;
            }
            const long fd = run(dir.at, m.path.empty() ? "." : m.path, how, true);
            // A directory of the supervisor's procfs (/proc/self/, /dev/fd/.) handed over would
            // be the host's /proc: from it, its ".." reaches every host process's environ and
            // mem, opened here with the supervisor's standing. The process gets its own
            // procfs's directory instead.
            if (fd >= 0 && in_host_procfs_dir(static_cast<int>(fd))) {
                ::close(static_cast<int>(fd));
                return in_target_proc();
            }
            return fd;
        }
        case Mapped::kTargetProc:
            return in_target_proc();
        case Mapped::kRoot:
        case Mapped::kPlain:
            if (!m.path.empty() && m.path[0] == '/') {
                Base root;
                if (const int e = open_root(r, root); e != 0) {
                    return -e;
                }
                open_how h = how;
                h.resolve |= RESOLVE_IN_ROOT;
                const long fd = run(root.at, m.path, h);
                return fd == -ENOENT && m.kind == Mapped::kPlain ? through_own_proc(root.at, m.path)
                                                                 : fd;
            }
            [[fallthrough]];
        case Mapped::kCwd: {
            const int at = m.kind == Mapped::kCwd ? AT_FDCWD : dirfd;
            Base base;
            if (const int e = open_base(r, base_link(at), base, true); e != 0) {
                return -(e == ENOENT && at != AT_FDCWD ? EBADF : e);
            }
            if (m.kind == Mapped::kPlain) {
                asked = joined(base.path, m.path);
            }
            // Beneath the directory is exact; a path that leaves it (.., an absolute link) is
            // resolved again from the root, by the directory's path.
            open_how h = how;
            h.resolve |= RESOLVE_BENEATH;
            const long fd = run(base.at, m.path, h);
            if (fd != -EXDEV) {
                return fd;
            }
            Base root;
            if (const int e = open_root(r, root); e != 0) {
                return -e;
            }
            h = how;
            h.resolve |= RESOLVE_IN_ROOT;
            const long again = run(root.at, joined(base.path, m.path), h);
            return again == -ENOENT && m.kind == Mapped::kPlain
                       ? through_own_proc(root.at, joined(base.path, m.path))
                       : again;
        }
    }
    return -EINVAL;
}

// The directory holding a path's last name, opened O_PATH as the process would reach it, and
// that name (with any trailing slashes, which the kernel's own call judges).
long open_parent(const Request &r, int dirfd, const std::string &path, std::string &last,
                 std::string &asked) {
    if (path.empty()) {
        return -ENOENT;
    }
    auto end = path.find_last_not_of('/');
    if (end == std::string::npos) {
        last = ".";
        open_how how{};
        how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
        return open_as_process(r, dirfd, "/", how, asked);
    }
    const auto slash = path.rfind('/', end);
    std::string dir;
    if (slash == std::string::npos) {
        dir = ".";
        last = path;
    } else {
        dir = slash == 0 ? "/" : path.substr(0, slash);
        last = path.substr(slash + 1);
    }
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    std::string dir_asked;
    const long fd = open_as_process(r, dirfd, dir, how, dir_asked);
    asked = slash == std::string::npos ? joined(dir_asked, last)
                                       : joined(dir_asked, path.substr(slash + 1));
    return fd;
}

// ---------------------------------------------------------------------------------------------
// Execs, recorded once they have happened

struct ExeState {
    dev_t dev = 0;
    ino_t ino = 0;
    std::string layout;  // the memory layout fields of /proc/PID/stat: new at every exec
    bool ok = false;
};

ExeState exe_state(pid_t pid) {
    ExeState s;
    struct stat st {};
    if (::stat(proc(pid, "exe").c_str(), &st) != 0) {
        return s;
    }
    s.dev = st.st_dev;
    s.ino = st.st_ino;
    const auto stat_text = read_small_file(proc(pid, "stat"));
    const auto close = stat_text.rfind(')');
    if (close == std::string::npos) {
        return s;
    }
    // Fields after the command name; 26-28 (startcode, endcode, startstack) and 45-51 (data,
    // brk, arguments, environment) are the new program's.
    std::vector<std::string_view> fields;
    std::string_view rest = std::string_view{stat_text}.substr(close + 2);
    while (!rest.empty()) {
        const auto sp = rest.find(' ');
        fields.push_back(rest.substr(0, sp));
        rest = sp == std::string_view::npos ? std::string_view{} : rest.substr(sp + 1);
    }
    // fields[0] is field 3 of stat.
    for (std::size_t f : {26U, 27U, 28U, 45U, 46U, 47U, 48U, 49U, 50U, 51U}) {
        if (f - 3 < fields.size()) {
            s.layout.append(fields[f - 3]);
            s.layout.push_back(' ');
        }
    }
    s.ok = true;
    return s;
}

struct PendingExec {
    std::string asked;  // absolute, as named
    pid_t tgid = 0;
    ExeState before;
    dev_t asked_dev = 0;  // the file the name led to when the exec was asked for
    ino_t asked_ino = 0;
    bool asked_found = false;
    bool start = false;   // the exec of the target start, during the set-up
    bool judged = false;  // asked in the judged phase (or by the launcher)
    const char *call = "execve";
};

struct State {
    std::string target_start;
    bool start_is_target = true;
    bool started = false;
    pid_t launcher = 0;  // the launcher's process, until it executes the target
    std::unordered_map<pid_t, PendingExec> pending;
    std::uint64_t notifications = 0;
};

State g;

bool judged(pid_t pid) {
    return g.started && pid != g.launcher;
}

// The loader the kernel mapped for the program (PT_INTERP): the mapping at the auxiliary
// vector's AT_BASE, by its path in /proc/PID/maps. Run by the kernel with no call of the
// process's own, so it is an exec of its own, as the eBPF observer reports it.
std::string loader_of(pid_t pid) {
    const auto auxv = read_small_file(proc(pid, "auxv"));
    std::uint64_t base = 0;
    for (std::size_t at = 0; at + 16 <= auxv.size(); at += 16) {
        std::uint64_t key = 0;
        std::uint64_t value = 0;
        std::memcpy(&key, auxv.data() + at, 8);
        std::memcpy(&value, auxv.data() + at + 8, 8);
        if (key == AT_BASE) {
            base = value;
            break;
        }
    }
    if (base == 0) {
        return {};  // a static program: no loader
    }
    std::array<char, 32> start{};
    (void)std::snprintf(start.data(), start.size(), "%llx-", static_cast<unsigned long long>(base));
    const auto maps = read_small_file(proc(pid, "maps"));
    std::size_t line = 0;
    while (line < maps.size()) {
        const auto end = maps.find('\n', line);
        const std::string_view text{maps.data() + line,
                                    (end == std::string::npos ? maps.size() : end) - line};
        if (text.rfind(start.data(), 0) == 0) {
            const auto slash = text.find('/');
            return slash == std::string_view::npos ? std::string{}
                                                   : std::string{text.substr(slash)};
        }
        line = end == std::string::npos ? maps.size() : end + 1;
    }
    return {};
}

void record_exec(pid_t pid, const PendingExec &p) {
    if (const auto loader = loader_of(pid); !loader.empty()) {
        g_record.add(pid, p.call, loader, loader, "exec", true, {}, {}, {});
    }
    const auto exe = read_link(proc(pid, "exe"));
    struct stat st {};
    const bool same = p.asked_found && ::stat(proc(pid, "exe").c_str(), &st) == 0 &&
                      st.st_dev == p.asked_dev && st.st_ino == p.asked_ino;
    if (same && !exe.empty()) {
        g_record.add(pid, p.call, p.asked, exe, "exec", true, {}, {}, {});
        return;
    }
    // The kernel ran another file than the name led to when the exec was asked for (a script's
    // interpreter, or a name changed meanwhile): the file run is judged by what it is, and the
    // name by what it names.
    if (!exe.empty() && exe[0] == '/') {
        g_record.add(pid, p.call, exe, exe, "exec", true, {}, {}, {});
    }
    g_record.add(pid, p.call, p.asked, {}, "exec", true, {}, p.asked, {});
}

// Settles the exec a process asked for, now that it runs again (or is gone). `alive`: the
// process made a call since, so its exec returned.
void settle_exec(pid_t pid, PendingExec &p, bool alive) {
    const ExeState now = exe_state(pid);
    const bool happened = now.ok && (now.dev != p.before.dev || now.ino != p.before.ino ||
                                     now.layout != p.before.layout);
    if (!now.ok || (!happened && !alive)) {
        if (p.judged || p.start) {
            // Gone before its exec could be read: the name is all there is.
            g_record.add(pid, p.call, p.asked, {}, "exec", true, {}, p.asked,
                         "the process ended before its exec could be verified");
            g_record.reason("a process ended before the observer could verify its exec");
        }
        return;
    }
    if (!happened) {
        if (p.judged) {
            g_record.add(pid, p.call, p.asked, {}, "exec", false, "?", {}, {});
        }
        return;
    }
    if (!g.started) {
        if (!p.start) {
            return;
        }
        g.started = true;
        if (!g.start_is_target) {
            g.launcher = pid;  // a launcher: its own work until its next exec is set-up
            return;
        }
        record_exec(pid, p);
        return;
    }
    if (pid == g.launcher || p.tgid == g.launcher) {
        g.launcher = 0;
    }
    if (p.judged) {
        record_exec(pid, p);
    }
}

void settle_pending_of(pid_t pid) {
    if (g.pending.empty()) {
        return;
    }
    if (auto it = g.pending.find(pid); it != g.pending.end()) {
        auto p = std::move(it->second);
        g.pending.erase(it);
        settle_exec(pid, p, true);
        return;
    }
    // An exec from another thread: the thread takes the group's pid.
    for (auto it = g.pending.begin(); it != g.pending.end(); ++it) {
        if (it->second.tgid == pid) {
            auto p = std::move(it->second);
            g.pending.erase(it);
            settle_exec(pid, p, true);
            return;
        }
    }
}

// The target start's exec, settled as soon as it has happened, whoever makes the next call: a
// target that forks before any call of its own (a static program) would otherwise leave the call
// in its set-up, and its children's calls would run unjudged and unrecorded.
void settle_start_if_done() {
    for (auto it = g.pending.begin(); it != g.pending.end(); ++it) {
        if (!it->second.start) {
            continue;
        }
        const pid_t pid = it->first;
        const ExeState now = exe_state(pid);
        const ExeState &before = it->second.before;
        if (now.ok &&
            (now.dev != before.dev || now.ino != before.ino || now.layout != before.layout)) {
            auto p = std::move(it->second);
            g.pending.erase(it);
            settle_exec(pid, p, true);
        }
        return;
    }
}

pid_t tgid_of(pid_t pid) {
    const auto status = read_small_file(proc(pid, "status"));
    const auto at = status.find("\nTgid:\t");
    return at == std::string::npos
               ? pid
               : static_cast<pid_t>(std::strtol(status.c_str() + at + 7, nullptr, 10));
}

void on_exec(const Request &r) {
    const pid_t pid = r.pid();
    const bool at_variant = r.nr() == __NR_execveat;
    const int dirfd = at_variant ? r.fd_arg(0) : AT_FDCWD;
    const std::uint64_t addr = at_variant ? r.arg(1) : r.arg(0);
    const int flags = at_variant ? static_cast<int>(r.arg(4)) : 0;
    std::string name;
    const bool read_ok = read_string(pid, addr, name) == 0;
    PendingExec p;
    p.call = at_variant ? "execveat" : "execve";
    if (!g.started) {
        // The set-up: only the target start's exec matters, by the name it was given.
        if (!read_ok || name != g.target_start || at_variant) {
            respond_continue(r);
            return;
        }
        p.start = true;
        // Known by the name it was given ("./run.sh" for a program bwrap's execvp finds in the
        // working directory), recorded as the path it names: the judge takes no relative path.
        p.asked = name[0] == '/' ? name : joined(read_link(proc(pid, "cwd")), name);
    } else {
        p.judged = true;
        if (!read_ok) {
            name.clear();
        }
        if (name.empty() && (flags & AT_EMPTY_PATH) != 0) {
            p.asked = read_link(proc(pid, "fd/" + std::to_string(dirfd)));
        } else if (!name.empty() && name[0] == '/') {
            p.asked = name;
        } else {
            const auto base = read_link(
                dirfd == AT_FDCWD ? proc(pid, "cwd") : proc(pid, "fd/" + std::to_string(dirfd)));
            p.asked = joined(base, name);
        }
        // What the name leads to now, inside the process's root: an exec of that file is
        // judged by it; another file run is judged apart.
        open_how how{};
        how.flags = O_PATH | O_CLOEXEC;
        std::string ignored;
        // An exec of a descriptor's file: the file at the descriptor.
        const long fd = name.empty() ? ::open(proc(pid, "fd/" + std::to_string(dirfd)).c_str(),
                                              O_PATH | O_CLOEXEC)
                                     : open_as_process(r, dirfd, name, how, ignored);
        if (fd >= 0) {
            struct stat st {};
            if (::fstat(static_cast<int>(fd), &st) == 0) {
                p.asked_found = true;
                p.asked_dev = st.st_dev;
                p.asked_ino = st.st_ino;
            }
            ::close(static_cast<int>(fd));
        }
        if (p.asked.empty()) {
            p.asked = name.empty() ? "?" : name;
        }
    }
    p.tgid = tgid_of(pid);
    p.before = exe_state(pid);
    if (!id_valid(r)) {
        return;
    }
    g.pending[pid] = std::move(p);
    respond_continue(r);
}

// ---------------------------------------------------------------------------------------------
// Opens

void record_open(const Request &r, std::string_view call, const std::string &asked, int fd,
                 std::uint64_t flags) {
    const auto resolved = read_link("/proc/self/fd/" + std::to_string(fd));
    if (resolved.empty() || resolved[0] != '/') {
        return;  // a pipe, a socket, an anonymous inode: no file of the file system
    }
    g_record.add(r.pid(), call, asked, resolved, open_access(flags), true, {}, {}, {});
}

void hand_over(const Request &r, std::string_view call, const std::string &asked, long fd,
               std::uint64_t flags) {
    if (fd < 0) {
        // The process gets the answer the open got. The judge lists a failed access only where
        // it must (beneath an always-listed path, a refused write): a write or create names what
        // the host follows after the call (a planted link).
        const auto access = open_access(flags);
        const bool follow = access == "write" || access == "create";
        // Recorded only once the answer reached the process: then the pid read was its own.
        if (respond_error(r, static_cast<int>(-fd)) && !asked.empty() && asked[0] == '/') {
            g_record.add(r.pid(), call, asked, {}, access, false, errno_name(static_cast<int>(-fd)),
                         follow ? std::string_view{asked} : std::string_view{}, {});
        }
        return;
    }
    Fd mine{static_cast<int>(fd)};
    seccomp_notif_addfd add{};
    add.id = r.n->id;
    add.flags = SECCOMP_ADDFD_FLAG_SEND;
    add.srcfd = static_cast<std::uint32_t>(mine.get());
    add.newfd_flags = (flags & O_CLOEXEC) != 0 ? O_CLOEXEC : 0;
    const int got = ::ioctl(g_listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
    if (got < 0) {
        if (errno != ENOENT) {
            respond_error(r, errno);  // EMFILE: the process's table is full
        }
        return;
    }
    record_open(r, call, asked, mine.get(), flags);
}

// An open that may block (a FIFO waiting for its other end), made by a forked worker that sends
// back the descriptor or the errno; the supervisor hands it over when it comes.
struct Blocked {
    pid_t worker = 0;
    Fd sock;
    std::vector<char> notif;  // the notification, as received
    std::string call;
    std::uint64_t flags = 0;
};

std::vector<Blocked> g_blocked;

// Ends the workers whose process no longer waits for them: a signal interrupts the process's
// open, which its restart asks again, and a target signalling one thread blocked on a FIFO would
// otherwise leave a worker behind for each signal, outside its sandbox, without bound.
void end_abandoned_workers() {
    for (std::size_t i = g_blocked.size(); i-- > 0;) {
        auto *n = reinterpret_cast<seccomp_notif *>(g_blocked[i].notif.data());
        if (id_valid(Request{n})) {
            continue;
        }
        ::kill(g_blocked[i].worker, SIGKILL);
        while (::waitpid(g_blocked[i].worker, nullptr, 0) < 0 && errno == EINTR) {
        }
        g_blocked.erase(g_blocked.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

void open_in_worker(const Request &r, std::string_view call, int dirfd, const std::string &path,
                    const open_how &how, std::uint64_t asked_flags) {
    end_abandoned_workers();
    std::array<int, 2> sv{};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv.data()) != 0) {
        respond_error(r, errno);
        return;
    }
    const pid_t worker = ::fork();
    if (worker < 0) {
        ::close(sv[0]);
        ::close(sv[1]);
        respond_error(r, EAGAIN);
        return;
    }
    if (worker == 0) {
        ::close(sv[0]);
        std::string asked;
        const long fd = open_as_process(r, dirfd, path, how, asked);
        answer_and_exit(sv[1], fd < 0 ? -fd : 0, asked, fd >= 0 ? static_cast<int>(fd) : -1);
    }
    ::close(sv[1]);
    Blocked b;
    b.worker = worker;
    b.sock.reset(sv[0]);
    const auto *bytes = reinterpret_cast<const char *>(r.n);
    b.notif.assign(bytes, bytes + sizeof(seccomp_notif));
    b.call = std::string{call};
    b.flags = asked_flags;
    g_blocked.push_back(std::move(b));
}

void hand_over(const Request &r, std::string_view call, const std::string &asked, long fd,
               std::uint64_t flags);

// The worker's answer: the open's errno and asked path, and its descriptor.
void finish_blocked(std::size_t i) {
    Blocked b = std::move(g_blocked[i]);
    g_blocked.erase(g_blocked.begin() + static_cast<std::ptrdiff_t>(i));
    const ChildAnswer got = receive_answer(b.sock.get());
    while (::waitpid(b.worker, nullptr, 0) < 0 && errno == EINTR) {
    }
    Request r{reinterpret_cast<seccomp_notif *>(b.notif.data())};
    if (!got.came) {
        respond_error(r, EIO);
        return;
    }
    const int error = static_cast<int>(got.number);
    hand_over(r, b.call, got.bytes, got.fd >= 0 ? got.fd : -(error == 0 ? EIO : error), b.flags);
}

void on_open(const Request &r) {
    const pid_t pid = r.pid();
    int dirfd = AT_FDCWD;
    std::uint64_t addr = 0;
    open_how how{};
    std::string_view call;
    switch (r.nr()) {
#ifdef __NR_open
        case __NR_open:
            call = "open";
            addr = r.arg(0);
            how.flags = r.arg(1);
            how.mode = r.arg(2);
            break;
#endif
#ifdef __NR_creat
        case __NR_creat:
            call = "creat";
            addr = r.arg(0);
            how.flags = O_CREAT | O_WRONLY | O_TRUNC;
            how.mode = r.arg(1);
            break;
#endif
        case __NR_openat:
            call = "openat";
            dirfd = r.fd_arg(0);
            addr = r.arg(1);
            how.flags = r.arg(2);
            how.mode = r.arg(3);
            break;
        case __NR_openat2: {
            call = "openat2";
            dirfd = r.fd_arg(0);
            addr = r.arg(1);
            const std::uint64_t size = r.arg(3);
            if (size < sizeof(open_how)) {
                respond_error(r, EINVAL);
                return;
            }
            // A larger struct from a newer libc: its extra bytes must be zero, as the kernel
            // requires; they are not read here, so the call is refused rather than misread.
            if (size > sizeof(open_how)) {
                respond_error(r, E2BIG);
                return;
            }
            if (const int e = read_bytes(pid, r.arg(2), &how, sizeof how); e != 0) {
                respond_error(r, e);
                return;
            }
            break;
        }
        default:
            respond_error(r, ENOSYS);
            return;
    }
    std::string path;
    if (const int e = read_string(pid, addr, path); e != 0) {
        respond_error(r, e);
        return;
    }
    // What was read is trusted only while the process is still the one that asked. An open
    // that only reads is checked later instead: it is recorded only once ADDFD (or the answer)
    // reached the process, which proves the pid was still its own when the path was read. An
    // open that writes or creates is checked now, before it changes anything.
    const bool only_reads =
        (how.flags & (O_ACCMODE | O_TRUNC)) == O_RDONLY && !will_create(how.flags);
    if (!only_reads && !id_valid(r)) {
        return;
    }
    if ((how.flags & O_PATH) != 0) {
        // An O_PATH descriptor cannot be handed over (ADDFD refuses it). It reads nothing, and
        // every open through it is performed here by the file it holds, so open and openat run
        // as asked: their flags are registers, which no other thread can change. openat2's are
        // in memory, which another thread could turn into a read after they were checked: it
        // answers ENOSYS, and callers fall back to openat.
        if (r.nr() == __NR_openat2) {
            respond_error(r, ENOSYS);
        } else {
            respond_continue(r);
        }
        return;
    }
    if (r.nr() != __NR_openat2) {
        how.flags &= kOpenFlags;
        // open ignores the mode of a call that makes no file (a runtime may pass 0666 with
        // O_DIRECTORY); openat2 refuses it.
        if (!will_create(how.flags)) {
            how.mode = 0;
        }
        how.mode &= 07777;
    }
    const std::uint64_t asked_flags = how.flags;
    // The supervisor never takes the process's terminal as its own.
    how.flags |= O_NOCTTY | O_CLOEXEC;
    // Opened without blocking: the open of a FIFO waits for its other end, and the supervisor
    // serves every process of the call. Such an open is made again, blocking, by a worker.
    const bool blocking = (asked_flags & O_NONBLOCK) == 0;
    if (blocking) {
        how.flags |= O_NONBLOCK;
    }
    std::string asked;
    long fd = open_as_process(r, dirfd, path, how, asked);
    if (blocking && fd >= 0) {
        struct stat st {};
        const int got = static_cast<int>(fd);
        // A FIFO opened for reading waits for a writer: the worker opens it again. One opened
        // for writing without waiting had its reader already, and O_RDWR never waits.
        if (::fstat(got, &st) == 0 && S_ISFIFO(st.st_mode) &&
            (asked_flags & O_ACCMODE) == O_RDONLY) {
            ::close(got);
            fd = -ENXIO;
        } else {
            (void)::fcntl(got, F_SETFL, static_cast<int>(asked_flags) & ~O_NONBLOCK);
        }
    }
    if (blocking && fd == -ENXIO) {
        how.flags &= ~static_cast<std::uint64_t>(O_NONBLOCK);
        open_in_worker(r, call, dirfd, path, how, asked_flags);
        return;
    }
    hand_over(r, call, asked, fd, asked_flags);
}

void on_open_by_handle(const Request &r) {
    // The handle names a file with no path to resolve in the process's root; the kernel's own
    // call needs CAP_DAC_READ_SEARCH in the initial namespace, which no confined process holds.
    respond_error(r, EPERM);
}

// ---------------------------------------------------------------------------------------------
// Listings, link reads and name changes, performed for the process

void on_getdents(const Request &r) {
    const pid_t pid = r.pid();
    const int fd = r.fd_arg(0);
    const std::size_t count = std::min<std::uint64_t>(r.arg(2), kMaxDirentBytes);
    Fd pidfd{static_cast<int>(::syscall(SYS_pidfd_open, pid, PIDFD_THREAD))};
    if (pidfd.get() < 0 || !id_valid(r)) {
        respond_error(r, ESRCH);
        return;
    }
    // The process's own open file: listing it moves its position as the process's call would.
    Fd mine{static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), fd, 0))};
    if (mine.get() < 0) {
        respond_error(r, errno == EBADF ? EBADF : errno);
        return;
    }
    if (!id_valid(r)) {
        return;
    }
    std::string buf(count, '\0');
    const int nr = r.nr();
    const int dir = mine.get();
    auto list = [nr, dir, count](std::string &bytes) -> long {
        bytes.assign(count, '\0');
        const long got = ::syscall(nr, dir, bytes.data(), bytes.size());
        bytes.resize(got < 0 ? 0 : static_cast<std::size_t>(got));
        return got < 0 ? -errno : got;
    };
    const auto path = read_link("/proc/self/fd/" + std::to_string(dir));
    long n = 0;
    if (on_procfs(dir) && !process_directory(path)) {
        // procfs lists some directories from the lister's namespaces (/proc/sys/net names the
        // host's own network settings): listed as the process, in its namespaces.
        bool held = false;
        const Namespaces ns = process_namespaces(r, held);
        if (!held) {
            respond_error(r, ESRCH);
            return;
        }
        Unowned got;
        if (ns.same) {
            got.value = list(got.bytes);
        } else {
            got = without_ownership(ns, list, false, count);
        }
        n = got.value;
        buf = std::move(got.bytes);
    } else {
        n = list(buf);
    }
    if (n < 0) {
        respond_error(r, static_cast<int>(-n));
        return;
    }
    if (const int e = write_bytes(r, r.arg(1), buf.data(), static_cast<std::size_t>(n)); e != 0) {
        respond_error(r, e);
        return;
    }
    if (!path.empty() && path[0] == '/') {
        g_record.add(pid, r.nr() == __NR_getdents64 ? "getdents64" : "getdents", path, path, "list",
                     true, {}, {}, {});
    }
    respond_value(r, n);
}

// One name a call acts on, relative to one directory argument.
struct Name {
    Fd parent;
    std::string path;  // as the process named it
    std::string last;
    std::string asked;
    int error = 0;
};

// Whether the name is the root of a mount in the process's view: its parent was reached through
// the process's own mounts, so the lookup here crosses the ones its namespace has on that name.
// The kernel refuses to rename or remove a mount point (EBUSY) only in the caller's own mount
// namespace; made from the supervisor's, the call would move a withheld folder out from under its
// cover, or delete the host file a withheld file's cover hides. A kernel that cannot say counts as
// a mount point: refused, never performed blind.
bool mount_point_in_view(const Name &n) {
    struct statx sx {};
    if (::statx(n.parent.get(), n.last.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE,
                &sx) != 0) {
        return false;  // nothing there (or nothing the process may see): the call answers for it
    }
    return (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) == 0 ||
           (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

Name name_arg(const Request &r, int dirfd, std::uint64_t addr) {
    Name out;
    std::string &path = out.path;
    if (const int e = read_string(r.pid(), addr, path); e != 0) {
        out.error = e;
        return out;
    }
    if (!id_valid(r)) {
        out.error = ESRCH;
        return out;
    }
    const long fd = open_parent(r, dirfd, path, out.last, out.asked);
    if (fd < 0) {
        out.error = static_cast<int>(-fd);
        if (out.asked.empty()) {
            out.asked = path;
        }
        return out;
    }
    out.parent.reset(static_cast<int>(fd));
    return out;
}

// Whether the kernel's call would follow the name's last link: a trailing slash makes every
// lookup follow it.
bool follows_last(const Name &n) {
    return !n.last.empty() && n.last.back() == '/';
}

// The file a name leads to with its last link followed, inside the process's root (O_PATH).
long open_followed(const Request &r, int dirfd, const std::string &path, bool directory) {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC | (directory ? O_DIRECTORY : 0);
    std::string ignored;
    return open_as_process(r, dirfd, path, how, ignored);
}

void answer_named(const Request &r, std::string_view call, const std::string &asked,
                  std::string_view access, long rc, int error) {
    const bool ok = rc >= 0;
    const std::string err = ok ? std::string{} : errno_name(error);
    const bool follow = access == "write" || access == "create" || access == "remove";
    if (!asked.empty()) {
        g_record.add(r.pid(), call, asked, {}, access, ok, err, follow ? asked : std::string{}, {});
    }
    if (ok) {
        respond_value(r, rc);
    } else {
        respond_error(r, error);
    }
}

void on_readlink(const Request &r) {
    const bool at = r.nr() == __NR_readlinkat;
    const int dirfd = at ? r.fd_arg(0) : AT_FDCWD;
    Name n = name_arg(r, dirfd, at ? r.arg(1) : r.arg(0));
    const std::uint64_t buf_addr = at ? r.arg(2) : r.arg(1);
    const auto size =
        static_cast<std::size_t>(std::min<std::uint64_t>(at ? r.arg(3) : r.arg(2), kPathMax));
    if (n.error != 0) {
        answer_named(r, at ? "readlinkat" : "readlink", {}, "readlink", -1, n.error);
        return;
    }
    std::string text(std::max<std::size_t>(size, 1), '\0');
    long rc = 0;
    int error = 0;
    if (follows_last(n)) {
        // readlinkat(parent, "link/") would follow the link from the supervisor's root, the
        // host's: its errno told whether a withheld host path exists. Followed inside the
        // process's root instead, where what it leads to is never a link.
        const long fd = open_followed(r, dirfd, n.path, true);
        rc = -1;
        error = fd < 0 ? static_cast<int>(-fd) : EINVAL;
        if (fd >= 0) {
            ::close(static_cast<int>(fd));
        }
    } else {
        AsProcess as{r, false};
        if (as.failed()) {
            rc = -1;
            error = ESRCH;
        } else if (on_procfs(n.parent.get()) &&
                   procfs_entry(n.parent.get(), r.pid()) == ProcEntry::other) {
            // Another process's exe, cwd, root or fd links, read with the supervisor's standing,
            // would name host paths the kernel refuses the process.
            bool held = false;
            const Namespaces ns = process_namespaces(r, held);
            const int parent = n.parent.get();
            const std::string &last = n.last;
            auto read_it = [parent, &last, size](std::string &bytes) -> long {
                bytes.assign(size, '\0');
                const ssize_t len = ::readlinkat(parent, last.c_str(), bytes.data(), size);
                bytes.resize(len < 0 ? 0 : static_cast<std::size_t>(len));
                return len < 0 ? -errno : len;
            };
            Unowned got;
            if (!held) {
                got.value = -ESRCH;
            } else if (ns.same) {
                got.value = read_it(got.bytes);
            } else {
                got = without_ownership(ns, read_it, false);
            }
            rc = got.value < 0 ? -1 : got.value;
            error = got.value < 0 ? static_cast<int>(-got.value) : 0;
            text.replace(0, got.bytes.size(), got.bytes);
        } else {
            rc = ::readlinkat(n.parent.get(), n.last.c_str(), text.data(), size);
            error = errno;
        }
    }
    if (rc >= 0) {
        if (const int e = write_bytes(r, buf_addr, text.data(), static_cast<std::size_t>(rc));
            e != 0) {
            rc = -1;
            error = e;
        }
    }
    // A failed link read is not listed.
    answer_named(r, at ? "readlinkat" : "readlink", rc >= 0 ? n.asked : std::string{}, "readlink",
                 rc, error);
}

void on_name_change(const Request &r) {
    const pid_t pid = r.pid();
    long rc = -1;
    int error = 0;
    auto done = [&](long value) {
        rc = value;
        error = value < 0 ? errno : 0;
    };
    // The call is made only once the process's identity is taken on: never as the supervisor.
    auto done_as = [&](const AsProcess &as, auto call) {
        if (as.failed()) {
            rc = -1;
            error = ESRCH;
            return;
        }
        done(call());
    };
    switch (r.nr()) {
#ifdef __NR_mkdir
        case __NR_mkdir:
#endif
        case __NR_mkdirat: {
            const bool is_at = r.nr() == __NR_mkdirat;
            Name n = name_arg(r, is_at ? r.fd_arg(0) : AT_FDCWD, is_at ? r.arg(1) : r.arg(0));
            const auto mode = static_cast<mode_t>(is_at ? r.arg(2) : r.arg(1));
            if (n.error == 0) {
                AsProcess as{r, true};
                done_as(as, [&] {
                    return static_cast<long>(::mkdirat(n.parent.get(), n.last.c_str(), mode));
                });
            } else {
                error = n.error;
            }
            answer_named(r, is_at ? "mkdirat" : "mkdir", n.asked, "create", rc, error);
            return;
        }
#ifdef __NR_mknod
        case __NR_mknod:
#endif
        case __NR_mknodat: {
            const bool is_at = r.nr() == __NR_mknodat;
            Name n = name_arg(r, is_at ? r.fd_arg(0) : AT_FDCWD, is_at ? r.arg(1) : r.arg(0));
            const auto mode = static_cast<mode_t>(is_at ? r.arg(2) : r.arg(1));
            const auto dev = static_cast<dev_t>(is_at ? r.arg(3) : r.arg(2));
            if (n.error == 0) {
                AsProcess as{r, true};
                done_as(as, [&] {
                    return static_cast<long>(::mknodat(n.parent.get(), n.last.c_str(), mode, dev));
                });
            } else {
                error = n.error;
            }
            answer_named(r, is_at ? "mknodat" : "mknod", n.asked, "create", rc, error);
            return;
        }
#ifdef __NR_unlink
        case __NR_unlink:
        case __NR_rmdir:
#endif
        case __NR_unlinkat: {
            const bool is_at = r.nr() == __NR_unlinkat;
            Name n = name_arg(r, is_at ? r.fd_arg(0) : AT_FDCWD, is_at ? r.arg(1) : r.arg(0));
            int flags = is_at ? static_cast<int>(r.arg(2)) : 0;
#ifdef __NR_rmdir
            if (r.nr() == __NR_rmdir) {
                flags = AT_REMOVEDIR;
            }
#endif
            if (n.error == 0 && mount_point_in_view(n)) {
                error = EBUSY;
            } else if (n.error == 0) {
                AsProcess as{r, false};
                done_as(as, [&] {
                    return static_cast<long>(::unlinkat(n.parent.get(), n.last.c_str(), flags));
                });
            } else {
                error = n.error;
            }
            const char *call = is_at ? "unlinkat" : (flags == AT_REMOVEDIR ? "rmdir" : "unlink");
            answer_named(r, call, n.asked, "remove", rc, error);
            return;
        }
#ifdef __NR_rename
        case __NR_rename:
#endif
        case __NR_renameat:
        case __NR_renameat2: {
            const bool is_at = r.nr() != __NR_renameat2 && r.nr() != __NR_renameat ? false : true;
            Name from = name_arg(r, is_at ? r.fd_arg(0) : AT_FDCWD, is_at ? r.arg(1) : r.arg(0));
            Name to = name_arg(r, is_at ? r.fd_arg(2) : AT_FDCWD, is_at ? r.arg(3) : r.arg(1));
            const auto flags = r.nr() == __NR_renameat2 ? static_cast<unsigned>(r.arg(4)) : 0U;
            if (from.error != 0 || to.error != 0) {
                error = from.error != 0 ? from.error : to.error;
            } else if (mount_point_in_view(from) || mount_point_in_view(to)) {
                error = EBUSY;
            } else {
                AsProcess as{r, false};
                done_as(as, [&] {
                    return static_cast<long>(::renameat2(from.parent.get(), from.last.c_str(),
                                                         to.parent.get(), to.last.c_str(), flags));
                });
            }
            const char *call = r.nr() == __NR_renameat2  ? "renameat2"
                               : r.nr() == __NR_renameat ? "renameat"
                                                         : "rename";
            const bool ok = rc >= 0;
            const std::string err = ok ? std::string{} : errno_name(error);
            g_record.add(pid, call, from.asked, {}, "remove", ok, err, from.asked, {});
            answer_named(r, call, to.asked, "create", rc, error);
            return;
        }
#ifdef __NR_link
        case __NR_link:
#endif
        case __NR_linkat: {
            const bool is_at = r.nr() == __NR_linkat;
            Name from = name_arg(r, is_at ? r.fd_arg(0) : AT_FDCWD, is_at ? r.arg(1) : r.arg(0));
            Name to = name_arg(r, is_at ? r.fd_arg(2) : AT_FDCWD, is_at ? r.arg(3) : r.arg(1));
            const int flags = is_at ? static_cast<int>(r.arg(4)) : 0;
            if ((flags & ~AT_SYMLINK_FOLLOW) != 0) {
                // AT_EMPTY_PATH links a descriptor's file: not performed here.
                error = EINVAL;
            } else if (from.error != 0 || to.error != 0) {
                error = from.error != 0 ? from.error : to.error;
            } else if ((flags & AT_SYMLINK_FOLLOW) != 0 || follows_last(from)) {
                // Following the source's last link from its parent here would resolve it from
                // the host's root: EXDEV against ENOENT told whether a withheld host file exists.
                // It is followed inside the process's root, and that file linked.
                const long fd =
                    open_followed(r, is_at ? r.fd_arg(0) : AT_FDCWD, from.path, follows_last(from));
                if (fd < 0) {
                    error = static_cast<int>(-fd);
                } else {
                    Fd file{static_cast<int>(fd)};
                    AsProcess as{r, true};
                    done_as(as, [&] {
                        return static_cast<long>(::linkat(
                            AT_FDCWD, ("/proc/self/fd/" + std::to_string(file.get())).c_str(),
                            to.parent.get(), to.last.c_str(), AT_SYMLINK_FOLLOW));
                    });
                }
            } else {
                AsProcess as{r, true};
                done_as(as, [&] {
                    return static_cast<long>(::linkat(from.parent.get(), from.last.c_str(),
                                                      to.parent.get(), to.last.c_str(), flags));
                });
            }
            answer_named(r, is_at ? "linkat" : "link", to.asked, "create", rc, error);
            return;
        }
#ifdef __NR_symlink
        case __NR_symlink:
#endif
        case __NR_symlinkat: {
            const bool is_at = r.nr() == __NR_symlinkat;
            std::string text;
            if (const int e = read_string(pid, r.arg(0), text); e != 0) {
                respond_error(r, e);
                return;
            }
            Name n = name_arg(r, is_at ? r.fd_arg(1) : AT_FDCWD, is_at ? r.arg(2) : r.arg(1));
            if (n.error == 0) {
                AsProcess as{r, true};
                done_as(as, [&] {
                    return static_cast<long>(
                        ::symlinkat(text.c_str(), n.parent.get(), n.last.c_str()));
                });
            } else {
                error = n.error;
            }
            answer_named(r, is_at ? "symlinkat" : "symlink", n.asked, "create", rc, error);
            return;
        }
        case __NR_truncate: {
            std::string path;
            if (const int e = read_string(pid, r.arg(0), path); e != 0) {
                respond_error(r, e);
                return;
            }
            if (!id_valid(r)) {
                return;
            }
            // The thread, held before its limit is read: a pid reused meanwhile is neither
            // asked nor signalled.
            const Fd thread{static_cast<int>(::syscall(SYS_pidfd_open, pid, PIDFD_THREAD))};
            rlimit limit{RLIM_INFINITY, RLIM_INFINITY};
            const auto status = read_small_file(proc(pid, "status"));
            if (thread.get() < 0 || ::prlimit(pid, RLIMIT_FSIZE, nullptr, &limit) != 0 ||
                status.empty() || !id_valid(r)) {
                respond_error(r, ESRCH);
                return;
            }
            open_how how{};
            how.flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
            std::string asked;
            const long fd = open_as_process(r, AT_FDCWD, path, how, asked);
            const auto length = static_cast<off_t>(r.arg(1));
            bool past_limit = false;
            if (fd >= 0) {
                Fd f{static_cast<int>(fd)};
                struct stat st {};
                // The file grows as far as the process's RLIMIT_FSIZE allows, not the
                // supervisor's: EFBIG and SIGXFSZ, as the kernel answers the process itself. A
                // growth past the supervisor's own limit would otherwise end the supervisor, and
                // the audit with it.
                past_limit = length >= 0 && limit.rlim_cur != RLIM_INFINITY &&
                             ::fstat(f.get(), &st) == 0 &&
                             st.st_size<length &&static_cast<rlim_t>(length)> limit.rlim_cur;
                if (past_limit) {
                    rc = -1;
                    error = EFBIG;
                } else {
                    done(::ftruncate(f.get(), length));
                }
            } else {
                error = static_cast<int>(-fd);
            }
            const auto signal_thread = [&] {
                (void)::syscall(SYS_pidfd_send_signal, thread.get(), SIGXFSZ, nullptr,
                                PIDFD_SIGNAL_THREAD);
            };
            // A SIGXFSZ left to its default action ends the process: sent before the answer, as
            // the kernel's own is pending before the call returns (sent after it, the process
            // could reach its exit first, and end with no signal). A caught one comes after the
            // answer, so that the call is not restarted by its handler, and asked again.
            const auto mask = [&status](std::string_view name) {
                const auto at = status.find(name);
                return at == std::string::npos
                           ? std::uint64_t{0}
                           : std::strtoull(status.c_str() + at + name.size(), nullptr, 16);
            };
            const std::uint64_t bit = std::uint64_t{1} << (SIGXFSZ - 1);
            const bool ignored = (mask("\nSigIgn:\t") & bit) != 0;
            const bool caught = (mask("\nSigCgt:\t") & bit) != 0;
            if (past_limit && !ignored && !caught) {
                signal_thread();
            }
            answer_named(r, "truncate", asked, "write", rc, error);
            if (past_limit && caught) {
                signal_thread();
            }
            return;
        }
        default:
            respond_error(r, ENOSYS);
            return;
    }
}

void serve(const Request &r) {
    ++g.notifications;
    const pid_t pid = r.pid();
    settle_pending_of(pid);
    if (!g.started) {
        settle_start_if_done();
    }
    const int nr = r.nr();
    if (nr == __NR_execve || nr == __NR_execveat) {
        on_exec(r);
        return;
    }
    if (nr == __NR_chroot || nr == __NR_pivot_root || nr == __NR_setns || nr == __NR_unshare) {
        if (judged(pid)) {
            g_roots_off = true;
            g_roots.clear();
        }
        respond_continue(r);
        return;
    }
    if (nr == __NR_exit_group || !judged(pid)) {
        // The confinement's set-up, or the launcher's own work: trusted, not judged.
        respond_continue(r);
        return;
    }
    switch (nr) {
#ifdef __NR_open
        case __NR_open:
#endif
#ifdef __NR_creat
        case __NR_creat:
#endif
        case __NR_openat:
        case __NR_openat2:
            on_open(r);
            return;
        case __NR_open_by_handle_at:
            on_open_by_handle(r);
            return;
#ifdef __NR_getdents
        case __NR_getdents:
#endif
        case __NR_getdents64:
            on_getdents(r);
            return;
#ifdef __NR_readlink
        case __NR_readlink:
#endif
        case __NR_readlinkat:
            on_readlink(r);
            return;
        default:
            on_name_change(r);
            return;
    }
}

// ---------------------------------------------------------------------------------------------
// The child, the hand-over, the loop

[[noreturn]] void run_child(int sock, char **argv) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        std::perror("tea-seccomp-supervise: no_new_privs");
        _exit(125);
    }
    const auto &program = tea::seccomp_observer::generated::observer_program;
    sock_fprog prog{static_cast<unsigned short>(std::size(program)),
                    const_cast<sock_filter *>(program)};
    const int listener = static_cast<int>(
        ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
    if (listener < 0) {
        std::perror("tea-seccomp-supervise: seccomp");
        _exit(125);
    }
    if (tea::send_descriptors(sock, {listener}) != 1) {
        _exit(125);
    }
    ::close(listener);
    char go = 0;
    // Nothing runs until the supervisor serves the listener: an open before would fail.
    if (::read(sock, &go, 1) != 1) {
        _exit(125);
    }
    ::close(sock);
    ::execvp(argv[0], argv);
    const int error = errno;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): the child is single-threaded
    (void)std::fprintf(stderr, "tea-seccomp-supervise: %s: %s\n", argv[0], std::strerror(error));
    _exit(error == ENOENT ? 127 : 126);
}

bool write_record(const std::string &path, const std::string &text) {
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        return false;
    }
    std::size_t at = 0;
    while (at < text.size()) {
        const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
        if (n <= 0) {
            ::close(fd);
            return false;
        }
        at += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) {
        return false;
    }
    return ::rename(tmp.c_str(), path.c_str()) == 0;
}

int end_as(int status) {
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    const int sig = WTERMSIG(status);
    const rlimit none{0, 0};
    ::setrlimit(RLIMIT_CORE, &none);
    (void)::signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    (void)sigprocmask(SIG_UNBLOCK, &set, nullptr);  // NOLINT(concurrency-mt-unsafe): one thread
    (void)::raise(sig);
    return 128 + sig;
}

int usage() {
    (void)std::fputs(
        "usage: TEA_SECCOMP_NONCE=N tea-seccomp-supervise --record PATH [--target-start PATH "
        "--start-kind target|launcher] -- PROGRAM [ARG...]\n",
        stderr);
    return 125;
}

}  // namespace

int main(int argc, char **argv) {
    std::string record_path;
    int i = 1;
    for (; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--") {
            ++i;
            break;
        }
        if (i + 1 >= argc) {
            return usage();
        }
        if (a == "--record") {
            record_path = argv[++i];
        } else if (a == "--target-start") {
            g.target_start = argv[++i];
        } else if (a == "--start-kind") {
            const std::string_view kind = argv[++i];
            if (kind != "target" && kind != "launcher") {
                return usage();
            }
            g.start_is_target = kind == "target";
        } else {
            return usage();
        }
    }
    if (i >= argc || record_path.empty()) {
        return usage();
    }
    // NOLINTNEXTLINE(concurrency-mt-unsafe): single-threaded
    const char *nonce_text = std::getenv("TEA_SECCOMP_NONCE");
    const std::string nonce = nonce_text != nullptr ? nonce_text : "";
    ::unsetenv("TEA_SECCOMP_NONCE");  // NOLINT(concurrency-mt-unsafe): single-threaded
    g.started = g.target_start.empty();

    if (struct stat st{}; ::stat("/proc/self", &st) == 0) {
        g_host_proc_dev = st.st_dev;
    }
    g_id.privileged = ::geteuid() == 0;
    if (struct stat ns{}; ::stat("/proc/self/ns/user", &ns) == 0) {
        g_id.my_userns = ns.st_ino;
    }
    if (g_id.privileged) {
        g_id.my_groups = ::getgroups(NGROUPS_MAX, g_id.my_groups_storage);
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        (void)::syscall(SYS_capget, &header, g_id.my_caps);
    }

    std::array<int, 2> sv{};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv.data()) != 0) {
        std::perror("tea-seccomp-supervise: socketpair");
        return 125;
    }
    const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    for (int sig : forwarded) {
        struct sigaction sa {};
        sa.sa_handler = forward;
        ::sigaction(sig, &sa, nullptr);
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        std::perror("tea-seccomp-supervise: fork");
        return 125;
    }
    if (pid == 0) {
        for (int sig : forwarded) {
            (void)::signal(sig, SIG_DFL);
        }
        ::close(sv[0]);
        run_child(sv[1], argv + i);
    }
    g_child = pid;
    // A file the supervisor grows past its own RLIMIT_FSIZE (the call's, inherited) answers EFBIG
    // instead of ending it: a target would otherwise end its audit by one truncate.
    (void)::signal(SIGXFSZ, SIG_IGN);
    ::close(sv[1]);
    g_listener = so::receive_listener(sv[0]);
    bool served = g_listener >= 0;
    if (served) {
        // The woken supervisor runs on the CPU the notifying process leaves.
        std::uint64_t flags = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
        (void)::ioctl(g_listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags);
        (void)::write(sv[0], "g", 1);
    } else {
        g_record.reason("the supervisor did not receive its listener");
    }
    ::close(sv[0]);

    seccomp_notif_sizes sizes{};
    if (served && ::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0) {
        sizes.seccomp_notif = sizeof(seccomp_notif);
    }
    std::vector<char> req_buf(std::max<std::size_t>(sizes.seccomp_notif, sizeof(seccomp_notif)));
    Fd child_fd{static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))};
    int status = 0;
    bool reaped = false;
    bool outlived = false;
    std::vector<pollfd> fds;
    while (served) {
        fds.assign(2 + g_blocked.size(), pollfd{});
        fds[0] = {g_listener, POLLIN, 0};
        fds[1] = {reaped ? -1 : child_fd.get(), POLLIN, 0};
        for (std::size_t b = 0; b < g_blocked.size(); ++b) {
            fds[2 + b] = {g_blocked[b].sock.get(), POLLIN, 0};
        }
        const int n = ::poll(fds.data(), fds.size(), reaped ? kOutliveGraceMs : -1);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            g_record.reason("the supervisor could not wait for its notifications");
            break;
        }
        if (n == 0) {
            outlived = true;
            break;
        }
        bool worker_done = false;
        for (std::size_t b = g_blocked.size(); b-- > 0;) {
            if (fds[2 + b].revents != 0) {
                finish_blocked(b);
                worker_done = true;
            }
        }
        if (worker_done) {
            continue;
        }
        if ((fds[0].revents & POLLIN) != 0) {
            std::fill(req_buf.begin(), req_buf.end(), 0);
            auto *notif = reinterpret_cast<seccomp_notif *>(req_buf.data());
            if (::ioctl(g_listener, SECCOMP_IOCTL_NOTIF_RECV, notif) == 0) {
                serve(Request{notif});
            }
            continue;
        }
        if ((fds[1].revents & POLLIN) != 0 || child_fd.get() < 0) {
            if (::waitpid(pid, &status, WNOHANG) == pid) {
                reaped = true;
            }
        }
        if ((fds[0].revents & (POLLHUP | POLLERR)) != 0 && reaped) {
            break;
        }
    }
    if (!reaped) {
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    // Opens still blocked belong to processes that are gone or outlived the call.
    for (auto &b : g_blocked) {
        ::kill(b.worker, SIGKILL);
        while (::waitpid(b.worker, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
    if (outlived) {
        g_record.reason(
            "processes of the call were still running when it ended; what they did after is not "
            "in the audit");
    }
    // Execs whose process never ran again: checked one last time, else unverified.
    for (auto &[p, pending] : g.pending) {
        settle_exec(p, pending, false);
    }
    if (!write_record(record_path, g_record.text(nonce, g.started, g.notifications))) {
        const int error = errno;
        (void)std::fprintf(stderr, "tea-seccomp-supervise: cannot write %s: %s\n",
                           record_path.c_str(),
                           std::strerror(error));  // NOLINT(concurrency-mt-unsafe): one thread
    }
    return end_as(status);
}
