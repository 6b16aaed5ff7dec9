// Every process of a plan starts here: posix_spawn's work plus the identity drop (uid-isolation),
// the plan's child set-up and the call's budget, in a child that shares the runtime's memory until
// it execs.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/exec_plan.hpp"
#include "exec/reaper.hpp"
#include "util/fd.hpp"

namespace tea::exec::detail {

std::vector<char *> c_strings(const std::vector<std::string> &items);

// The budget's share of the child's work: the call's cgroups it joins, and the resource limits
// that stand in for a budget no cgroup holds (0: none).
struct ChildBudget {
    std::vector<int> join;  // cgroup.procs files, written "0" before the exec
    std::uint64_t data_bytes = 0;
    std::uint64_t processes = 0;
    [[nodiscard]] bool requested() const {
        return !join.empty() || data_bytes != 0 || processes != 0;
    }
};

// What the child of spawn_as does, and how far it got. It shares the runtime's
// memory until it execs (CLONE_VM | CLONE_VFORK), so it makes only system
// calls, each through syscall(2) where the C library would do more: glibc's
// setresuid, say, would ask every thread of the runtime to change identity too.
struct SpawnAs {
    const char *program = nullptr;
    char *const *argv = nullptr;
    char *const *envp = nullptr;
    const char *cwd = nullptr;
    std::vector<std::pair<int, int>> dups;  // (from, to)
    bool drop = false;                      // become uid/gid with no capability (the plan's runAs)
    int mount_namespace = -1;               // entered first (RunOptions::mount_namespace)
    uid_t uid = 0;
    gid_t gid = 0;
    ChildSetup setup;
    bool die_with_runtime = false;  // arm the parent-death signal (a plan that confines nothing)
    pid_t runtime = -1;             // the process that starts the child
    ChildBudget budget;
    // Set by the child when it fails, before it exits.
    const char *failed_at = nullptr;
    int error = 0;
};

// posix_spawn's work plus the identity drop, the plan's child set-up (limits, keyring) and, for
// a plan that confines nothing, the parent-death signal, in a child that shares the runtime's
// memory until it execs: no copy of the runtime, and no helper process started only to drop
// privileges or set limits. Every process of a plan starts here. Returns the child, or throws
// setup_error; an exec (or the change to the plan's directory) that fails is returned as {-1,
// errno}.
std::pair<pid_t, int> spawn_as(SpawnAs &request);

// One process of a plan: the plan's own or its holder.
struct ProcessParts {
    const std::string &program;  // argv[0] resolved
    const std::vector<std::string> &argv;
    const std::vector<std::string> &env;
    const std::string &cwd;
    const std::vector<PlanFile> &files;
    std::vector<std::pair<int, int>> dups;  // (runtime's descriptor, the child's number)
    // Where the runtime's ends of the deferred files go: (the child's number, the runtime's end).
    std::vector<std::pair<int, UniqueFd>> *deferred = nullptr;
    int mount_namespace = -1;  // RunOptions::mount_namespace
    const ChildBudget *budget = nullptr;
};

// Starts one process of the plan in a process group (or, when the plan asks, a session) of its
// own, with exactly the given descriptors: 0-2, the files and the dups. Returns {pid, 0}, or {-1,
// errno} when it could not be executed; throws setup_error when the runtime could not set it up.
std::pair<pid_t, int> start_process(const ExecPlan &plan, const ProcessParts &p);

// A plan's holder, ended with its process group (and reaped) however the call ends.
struct HolderProcess {
    pid_t pid = -1;
    HolderProcess() = default;
    HolderProcess(const HolderProcess &) = delete;
    HolderProcess &operator=(const HolderProcess &) = delete;
    ~HolderProcess() { end(); }
    void signal(int signal_number) const { kill_group(pid, signal_number); }
    void end() {
        if (pid > 0) {
            kill_group(pid, SIGKILL);
            while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
            }
            pid = -1;
        }
    }
};

}  // namespace tea::exec::detail
