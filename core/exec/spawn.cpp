#include "exec/spawn.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include "exec/clone_child.hpp"
#include "exec/plan_descriptors.hpp"
#include "util/error.hpp"

namespace tea::exec::detail {
namespace {

// Every id the sandbox identity's and no capability left: checked, not trusted.
bool identity_holds(const SpawnAs &s) {
    std::array<uid_t, 3> uids{};  // real, effective, saved
    std::array<gid_t, 3> gids{};
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    std::array<__user_cap_data_struct, 2> caps{};
    if (::syscall(SYS_getresuid, &uids[0], &uids[1], &uids[2]) != 0 ||
        ::syscall(SYS_getresgid, &gids[0], &gids[1], &gids[2]) != 0 ||
        ::syscall(SYS_capget, &header, caps.data()) != 0) {
        return false;
    }
    return std::all_of(uids.begin(), uids.end(), [&](uid_t u) { return u == s.uid; }) &&
           std::all_of(gids.begin(), gids.end(), [&](gid_t g) { return g == s.gid; }) &&
           std::all_of(caps.begin(), caps.end(), [](const __user_cap_data_struct &c) {
               return c.effective == 0 && c.permitted == 0 && c.inheritable == 0;
           });
}

// The identity drop (uid-isolation): no capability in any set, no supplementary group, every id
// the sandbox's, no_new_privs; checked, not trusted. Runs in spawn_as's child.
template <typename Fail>
void drop_identity(const SpawnAs &s, Fail &fail) {
    // Capabilities are numbered from 0 up to the kernel's last one without a gap; the first
    // number past it answers EINVAL, and so do all after it.
    for (int cap = 0; cap <= 63; ++cap) {
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
            if (errno == EINVAL && cap > 0) {
                break;
            }
            fail("dropping a capability from the bounding set");
        }
    }
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
        fail("clearing the ambient capabilities");
    }
    if (::syscall(SYS_setgroups, 0, nullptr) != 0) {
        fail("clearing the supplementary groups");
    }
    if (::syscall(SYS_setresgid, s.gid, s.gid, s.gid) != 0 ||
        ::syscall(SYS_setresuid, s.uid, s.uid, s.uid) != 0) {
        fail("changing the identity");
    }
    // The uid change empties the effective and permitted sets but keeps the
    // inheritable one, which the host may have set: emptied too.
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    std::array<__user_cap_data_struct, 2> no_caps{};
    if (::syscall(SYS_capset, &header, no_caps.data()) != 0) {
        fail("clearing the capability sets");
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        fail("setting no_new_privs");
    }
    if (!identity_holds(s)) {
        errno = EPERM;
        fail("checking the identity");
    }
}

int spawn_as_child(void *arg) {
    auto &s = *static_cast<SpawnAs *>(arg);
    auto fail = [&](const char *what) {
        s.failed_at = what;
        s.error = errno;
        ::_exit(127);
    };
    // The order is the call's safety. The process group first, so that ending the group ends
    // whatever this child becomes. Then the cgroup, before anything else the child does, so no
    // step of the call runs (or allocates) outside its budget. Then the call's mount namespace,
    // before anything resolves a path of the call (its lent trees are where the plan names them
    // only in there). Both use descriptors of the runtime's that a plan's number may take once
    // the descriptors are placed, and both take the runtime's privileges (writing the cgroup's
    // tasks, CAP_SYS_ADMIN for setns), so they come before the placing and before the drop.
    //
    // A plan whose confinement gives the target no session of its own asks for one here (a new
    // session is also a new group): without a controlling terminal, nothing of the call can push
    // input into the user's shell (TIOCSTI) or open /dev/tty.
    if (s.setup.new_session ? ::setsid() < 0 : ::setpgid(0, 0) != 0) {
        fail(s.setup.new_session ? "setsid" : "setpgid");
    }
    for (const int fd : s.budget.join) {
        if (::write(fd, "0", 1) != 1) {
            fail("joining the call's cgroup");
        }
    }
    if (s.mount_namespace >= 0 && ::syscall(SYS_setns, s.mount_namespace, CLONE_NEWNS) != 0) {
        fail("entering the call's mount namespace");
    }
    // As POSIX_SPAWN_SETSIGDEF for every signal: nothing the runtime ignores
    // stays ignored in the call (the mask stays full until the exec).
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
        ::sigaction(sig, &default_action, nullptr);  // EINVAL for KILL, STOP and libc's own
    }
    for (const auto &[from, to] : s.dups) {
        // A descriptor already at its number only loses close-on-exec, as posix_spawn's dup2
        // action does.
        if (from == to ? ::fcntl(to, F_SETFD, 0) != 0 : ::dup2(from, to) < 0) {
            fail("placing a descriptor");
        }
    }
    if (::chdir(s.cwd) != 0) {
        fail("chdir");
    }
    if (s.drop) {
        drop_identity(s, fail);
    }
    // After the drop, so that the keyring and the process count belong to the identity that runs.
    // The budget's stand-ins come after the plan's own limits: the lower of two process counts
    // holds (the plan's is never raised, since the budget's is only set when lower).
    const std::array<std::pair<int, std::uint64_t>, 5> limits{
        {{RLIMIT_CPU, s.setup.limits.cpu_seconds},
         {RLIMIT_FSIZE, s.setup.limits.file_size_bytes},
         {RLIMIT_NPROC, s.setup.limits.processes},
         {RLIMIT_DATA, s.budget.data_bytes},
         {RLIMIT_NPROC,
          s.setup.limits.processes != 0 && s.setup.limits.processes < s.budget.processes
              ? 0
              : s.budget.processes}}};
    for (const auto &[resource, value] : limits) {
        const rlimit limit{value, value};
        if (value != 0 && ::syscall(SYS_prlimit64, 0, resource, &limit, nullptr) != 0) {
            fail("setting a resource limit");
        }
    }
    // A fresh anonymous session keyring: no key of the host's session (a login's credentials,
    // say) is reachable from the call.
    if (s.setup.new_session_keyring &&
        ::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) < 0 && errno != ENOSYS) {
        fail("joining a new session keyring");
    }
    // A runtime killed outright (SIGKILL) ends no call itself. A plan that confines nothing has
    // no mechanism of its own to end it then: its process dies with the runtime. Armed last,
    // since an identity change clears it, then checked against a runtime that died before it was
    // armed (the child was reparented meanwhile). A confinement ends itself instead, watching the
    // call's output pipes (ExecPlan): a parent-death signal could kill its launcher half-way
    // through its set-up (bwrap killed between its clone and releasing its child leaves that
    // child blocked for ever).
    if (s.die_with_runtime) {
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
            fail("arming the parent-death signal");
        }
        if (::syscall(SYS_getppid) != s.runtime) {
            ::_exit(127);  // nobody is left to read why
        }
    }
    sigset_t none;
    sigemptyset(&none);
    ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
    ::execve(s.program, s.argv, s.envp);
    fail("exec");
    return 127;
}

}  // namespace

std::vector<char *> c_strings(const std::vector<std::string> &items) {
    std::vector<char *> out;
    out.reserve(items.size() + 1);
    for (const auto &s : items) {
        out.push_back(const_cast<char *>(s.c_str()));  // NOLINT: execve's historical signature
    }
    out.push_back(nullptr);
    return out;
}

// posix_spawn's work plus the identity drop, the plan's child set-up (limits, keyring) and, for
// a plan that confines nothing, the parent-death signal, in a child that shares the runtime's
// memory until it execs: no copy of the runtime, and no helper process started only to drop
// privileges or set limits. Every process of a plan starts here. Returns the child, or throws
// setup_error; an exec (or the change to the plan's directory) that fails is returned as {-1,
// errno}.
std::pair<pid_t, int> spawn_as(SpawnAs &request) {
    request.runtime = ::getpid();
    // The child's stack is a stretch of this frame: the runtime's thread is suspended until the
    // child execs or exits (CLONE_VFORK), so nothing else uses it meanwhile. No mapping made and
    // removed per call: on a VM, unmapping a range costs a TLB flush of each of its pages.
    // Left uninitialised: the child writes what it uses.
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init)
    alignas(64) std::array<char, std::size_t{64} * 1024> stack;
    const pid_t pid =
        clone_sharing_memory(spawn_as_child, &request, CLONE_VM | CLONE_VFORK | SIGCHLD, stack);
    const int clone_error = errno;
    stack_returned(stack);
    if (pid < 0) {
        throw setup_error("clone", clone_error);
    }
    if (request.failed_at == nullptr) {
        return {pid, 0};
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    // A program that cannot be run there is the call's failure to start, as posix_spawn reports
    // it; anything else is the runtime's.
    const std::string_view step{request.failed_at};
    if (step == "exec" || step == "chdir") {
        return {-1, request.error};
    }
    // Fail closed: a call whose identity or budget could not be established never runs.
    throw setup_error(request.drop
                          ? std::string{"running the call as uid "} + std::to_string(request.uid) +
                                " gid " + std::to_string(request.gid) + ": " + request.failed_at
                          : std::string{"starting the call: "} + request.failed_at,
                      request.error);
}

// Starts one process of the plan in a process group (or, when the plan asks, a session) of its
// own, with exactly the given descriptors: 0-2, the files and the dups. Returns {pid, 0}, or {-1,
// errno} when it could not be executed; throws setup_error when the runtime could not set it up.
std::pair<pid_t, int> start_process(const ExecPlan &plan, const ProcessParts &p) {
    std::vector<UniqueFd> plan_fds;
    plan_fds.reserve(p.files.size());
    auto dups = p.dups;
    for (const auto &f : p.files) {
        if (f.deferred) {
            if (p.deferred == nullptr) {
                throw runtime_failure("the plan defers descriptor " + std::to_string(f.child_fd) +
                                      " but was not started as a staged call");
            }
            auto ends = deferred_pair();
            plan_fds.push_back(std::move(ends[0]));
            p.deferred->emplace_back(f.child_fd, std::move(ends[1]));
        } else {
            plan_fds.push_back(f.path.empty() ? sealed_memfd(f.content) : opened_file(f.path));
        }
        dups.emplace_back(plan_fds.back().get(), f.child_fd);
    }
    auto argv = c_strings(p.argv);
    auto envp = c_strings(p.env);
    const bool budgeted = p.budget != nullptr && p.budget->requested();
    SpawnAs request;
    request.mount_namespace = p.mount_namespace;
    request.program = p.program.c_str();
    request.argv = argv.data();
    request.envp = envp.data();
    request.cwd = p.cwd.c_str();
    request.drop = plan.run_as.requested;
    request.uid = plan.run_as.uid;
    request.gid = plan.run_as.gid;
    request.setup = plan.child;
    request.die_with_runtime = plan.confinement == "opt-out";
    if (budgeted) {
        request.budget = *p.budget;
    }
    request.dups = std::move(dups);
    return spawn_as(request);
}

}  // namespace tea::exec::detail
