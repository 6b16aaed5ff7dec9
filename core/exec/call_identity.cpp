#include "exec/call_identity.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "exec/clone_child.hpp"
#include "util/error.hpp"

namespace tea::exec {
namespace {

// The lock directory, made when missing: root's, mode 0700, no link. Returns its descriptor.
UniqueFd open_locks(const std::filesystem::path &locks) {
    std::error_code ec;
    std::filesystem::create_directories(locks.parent_path(), ec);
    if (::mkdir(locks.c_str(), 0700) != 0 && errno != EEXIST) {
        throw host_error("cannot make the identity lock directory " + locks.string() + ": " +
                         errno_text(errno));
    }
    UniqueFd dir{::open(locks.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    struct stat st {};
    if (!dir || ::fstat(dir.get(), &st) != 0) {
        throw host_error("cannot open the identity lock directory " + locks.string() + ": " +
                         errno_text(errno));
    }
    // Another user able to write there could hold every id, or remove a held lock's name.
    if (st.st_uid != 0 || (st.st_mode & 077) != 0) {
        throw host_error("the identity lock directory " + locks.string() +
                         " is not root's alone (mode 0700); remove it, and it is made again");
    }
    return dir;
}

bool has_account(std::uint32_t id) {
    std::vector<char> buffer(4096);
    passwd pw{};
    passwd *user = nullptr;
    group gr{};
    group *grp = nullptr;
    ::getpwuid_r(id, &pw, buffer.data(), buffer.size(), &user);
    ::getgrgid_r(id, &gr, buffer.data(), buffer.size(), &grp);
    return user != nullptr || grp != nullptr;
}

// The kernel's overflow id (/proc/sys/kernel/overflowuid, or overflowgid): what an idmapped tree
// shows for owners its mapping leaves out.
bool is_overflow(std::uint32_t id) {
    for (const char *file : {"/proc/sys/kernel/overflowuid", "/proc/sys/kernel/overflowgid"}) {
        const UniqueFd fd{::open(file, O_RDONLY | O_CLOEXEC)};
        std::array<char, 16> text{};
        const auto n = fd ? ::read(fd.get(), text.data(), text.size() - 1) : -1;
        std::uint32_t value = 65534;
        if (n > 0) {
            std::from_chars(text.data(), text.data() + n, value);
        }
        if (value == id) {
            return true;
        }
    }
    return false;
}

// What the probe of processes_remain found, written by the probe itself (it shares this memory).
struct NprocProbe {
    uid_t uid = 0;
    std::span<char> child_stack;  // for the process it starts against the limit
    int error = 0;                // of that start: EAGAIN when others count
    const char *failed_at = nullptr;
};

int exit_at_once(void * /*unused*/) {
    ::syscall(SYS_exit, 0);
    return 0;
}

// As `uid`, with RLIMIT_NPROC at 2, starts one process: the kernel counts every process of the uid
// on the host (in user namespaces it made too), this probe and its new child included, so the start
// is refused (EAGAIN) exactly when a third one exists. Raw system calls only: the probe shares the
// runtime's memory, and glibc's setresuid would ask the runtime's threads to change identity too.
int probe_nproc(void *arg) {
    auto &p = *static_cast<NprocProbe *>(arg);
    const rlimit two{2, 2};
    if (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
        ::syscall(SYS_setresgid, p.uid, p.uid, p.uid) != 0 ||
        ::syscall(SYS_setresuid, p.uid, p.uid, p.uid) != 0) {
        p.failed_at = "taking the identity";
        ::syscall(SYS_exit, 1);
    }
    if (::syscall(SYS_prlimit64, 0, RLIMIT_NPROC, &two, nullptr) != 0) {
        p.failed_at = "setting RLIMIT_NPROC";
        ::syscall(SYS_exit, 1);
    }
    // Sharing memory too, so that nothing of the runtime is copied for a process that only exits.
    const pid_t child = ::clone(exit_at_once, p.child_stack.data() + p.child_stack.size(),
                                CLONE_VM | CLONE_VFORK | SIGCHLD, nullptr);
    if (child < 0) {
        p.error = errno;
    } else {
        ::syscall(SYS_wait4, child, nullptr, 0, nullptr);
    }
    ::syscall(SYS_exit, 0);
    return 0;
}

}  // namespace

bool processes_remain(uid_t uid) {
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): the probes' stacks
    alignas(64) std::array<char, 16384> stack;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init)
    alignas(64) std::array<char, 4096> child_stack;
    NprocProbe probe{uid, child_stack, 0, nullptr};
    const pid_t pid =
        clone_sharing_memory(probe_nproc, &probe, CLONE_VM | CLONE_VFORK | SIGCHLD, stack);
    const int clone_error = errno;
    if (pid < 0) {
        throw host_error("cannot look for processes of uid " + std::to_string(uid) + ": " +
                         errno_text(clone_error));
    }
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    stack_returned(stack);
    stack_returned(child_stack);
    if (probe.failed_at != nullptr) {
        throw host_error("cannot look for processes of uid " + std::to_string(uid) + ": " +
                         probe.failed_at);
    }
    return probe.error == EAGAIN;
}

CallIdentity::CallIdentity(std::uint32_t first, std::uint32_t last,
                           const std::filesystem::path &locks) {
    const auto dir = open_locks(locks);
    std::uint32_t busy = 0;
    for (std::uint64_t id = first; id <= last; ++id) {
        const auto candidate = static_cast<std::uint32_t>(id);
        if (candidate == 0 || has_account(candidate) || is_overflow(candidate)) {
            continue;
        }
        UniqueFd lock{::openat(dir.get(), std::to_string(candidate).c_str(),
                               O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)};
        if (!lock) {
            throw host_error("cannot open the identity lock " +
                             (locks / std::to_string(id)).string() + ": " + errno_text(errno));
        }
        if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
            ++busy;
            continue;  // another call holds it
        }
        // A process a killed call left could still act as this id: another call's target must
        // never share it.
        if (processes_remain(candidate)) {
            ++busy;
            continue;
        }
        lock_ = std::move(lock);
        id_ = candidate;
        return;
    }
    throw host_error("no identity of [confinement] uid_range (" + std::to_string(first) + "-" +
                     std::to_string(last) + ") is free: " + std::to_string(busy) +
                     " are held by running calls or still have processes, and the rest belong to "
                     "accounts; widen the range, or wait for calls to end");
}

}  // namespace tea::exec
