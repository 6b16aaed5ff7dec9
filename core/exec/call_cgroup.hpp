// A call's own control group: the kernel bounds the memory and the number of processes of
// everything the call starts (the observer, the confinement's set-up, the target and all it
// forks), counts what it refused, and ends whatever is still in it when the call ends.
//
// Where the host allows it. cgroup v2: a subtree the runtime may write (as root; or a user's
// cgroup delegated to the runtime alone, as `systemd-run --user --scope -p Delegate=yes` makes
// it) with the memory and pids controllers. cgroup v1 (a hybrid host): the memory, pids and
// freezer hierarchies, as root. A call's cgroups are made beneath the runtime's own cgroup in
// each hierarchy, so whatever bounds the runtime (a systemd slice, a container) bounds its calls.
// A budget no controller can hold is left to the runner's child as a resource limit, which is
// weaker (docs/confinement.md, "Budgets"): RLIMIT_DATA per process for memory, RLIMIT_NPROC for
// processes, which counts every process of the identity on the host.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.hpp"

namespace tea::exec {

// What one call may consume.
struct Budget {
    std::uint64_t memory_bytes = 0;  // 0: unbounded
    std::uint64_t processes = 0;     // 0: unbounded
    bool cgroups = true;             // false: resource limits only ([budgets] cgroup = "off")
    // The memory budget is a share of the host's memory (`memory = "50%"`): a bound on the call
    // as a whole, which only a cgroup holds. It never falls back to RLIMIT_DATA, which bounds
    // each process alone (so no share of the host) and counts address space a program only
    // reserves (a sanitizer's shadow memory), so it would stop such programs and protect nothing.
    bool memory_is_share = false;
    bool operator==(const Budget &) const = default;
    [[nodiscard]] bool any() const { return memory_bytes != 0 || processes != 0; }
};

// How a budget was enforced.
enum class Enforcement { none, cgroup_v2, cgroup_v1, rlimit };
// "none", "cgroup2", "cgroup1" or "rlimit", as the records name it.
const char *to_string(Enforcement enforcement);

// What bounded a call, and what the kernel counted against it.
struct BudgetReport {
    Budget budget;
    Enforcement memory = Enforcement::none;
    Enforcement processes = Enforcement::none;
    std::uint64_t oom_kills = 0;          // processes the OOM killer ended at the memory budget
    std::uint64_t refused_forks = 0;      // forks and clones refused at the process budget
    std::uint64_t memory_peak_bytes = 0;  // the most the call held at once; 0: not known
    std::uint64_t left_killed = 0;        // processes the cgroup still held at the end, killed
    std::string cgroup_unavailable;       // why no cgroup holds a budget, when one is not held
};

// Where this runtime makes the cgroups of its calls.
struct CgroupLayout {
    std::filesystem::path v2_parent;  // cgroup2: the parent of the call cgroups; empty: none
    bool v2_memory = false;           // the parent enables the memory controller for them
    bool v2_pids = false;
    std::filesystem::path v1_memory;  // cgroup v1: the parent in each hierarchy; empty: none
    std::filesystem::path v1_pids;
    std::filesystem::path v1_freezer;  // ends the call's processes all at once, frozen
    std::string why_not;               // why no controller holds a budget, when one does not
    [[nodiscard]] Enforcement memory() const;
    [[nodiscard]] Enforcement processes() const;
};

// Why no cgroup holds a budget that falls to a resource limit (`rlimit`) or, a share of the
// host's memory, is left unbounded (`none`); empty when every budget is held by a cgroup.
std::string cgroup_unavailable(const CgroupLayout &layout, const Budget &budget, Enforcement memory,
                               Enforcement processes);

// The runtime's own cgroup in each mounted hierarchy, found in the text of /proc/self/mountinfo
// and /proc/self/cgroup. A hierarchy whose mount does not show the runtime's cgroup (another
// cgroup namespace's subtree) is left out.
struct OwnCgroups {
    std::filesystem::path v2;                         // in the cgroup2 mount; empty: none
    bool v2_is_root = false;                          // the hierarchy's root cgroup
    std::map<std::string, std::filesystem::path> v1;  // controller -> directory
};
OwnCgroups parse_own_cgroups(std::string_view mountinfo, std::string_view proc_cgroup);

// This process's layout, found on first use (thread-safe) and kept. Finding it reclaims what a
// killed runtime left: every call cgroup beneath the same parents whose owner is gone is emptied
// (its processes killed) and removed. Where the runtime's cgroup2 cgroup is delegated to it and
// holds nothing else, the runtime moves itself into a leaf beneath it (tea-runtime-*), so its
// call cgroups can be that leaf's siblings with the controllers enabled.
const CgroupLayout &host_cgroup_layout();

// Removes the call cgroups beneath the layout's parents whose owning runtime has ended, after
// ending every process left in them. Returns how many were removed.
int reclaim_call_cgroups(const CgroupLayout &layout);

// One call's cgroups, made with the budget's limits written; ended and removed by end() or the
// destructor.
class CallCgroup {
   public:
    // Throws tea::Error (exit 125) naming the file the kernel refused.
    CallCgroup(const CgroupLayout &layout, const Budget &budget);
    CallCgroup(const CallCgroup &) = delete;
    CallCgroup &operator=(const CallCgroup &) = delete;
    CallCgroup(CallCgroup &&) = delete;
    CallCgroup &operator=(CallCgroup &&) = delete;
    ~CallCgroup();

    // The files a process of the call writes "0" to, before its exec, to join: cgroup2's
    // cgroup.procs, or in each cgroup v1 hierarchy `tasks`, which moves only the writing thread
    // (the whole of a process of one thread, as the runner's child is).
    [[nodiscard]] std::vector<int> join_fds() const;
    // What the budget is enforced by here, with nothing counted yet.
    [[nodiscard]] const BudgetReport &report() const { return report_; }
    // Ends every process left in the cgroups, reads what the kernel counted, and removes them.
    // Once: later calls return the same report.
    BudgetReport end();

   private:
    struct Member {
        std::filesystem::path path;
        UniqueFd dir;
        UniqueFd procs;
    };
    Member make(const std::filesystem::path &parent, const char *join);
    void make_members(const CgroupLayout &layout, const Budget &budget);

    std::string name_;
    std::vector<Member> members_;  // v2; or v1 memory, pids, freezer (those in use)
    Member *v2_ = nullptr;
    Member *memory_ = nullptr;
    Member *pids_ = nullptr;
    Member *freezer_ = nullptr;
    BudgetReport report_;
    bool ended_ = false;
};

// The file protocol, each step on an open cgroup directory (exposed for the tests, which check
// it on plain files where no cgroup2 controller is at hand).
namespace cgroup_files {
// Writes the value, as the kernel takes it, in one write. Throws tea::Error naming the file.
void write(int dir, const char *file, std::string_view value);
// The number after `key` on a "key N" line of the file (memory.events, pids.events,
// memory.oom_control); 0 when the file or the key is absent.
std::uint64_t read_key(int dir, const char *file, std::string_view key);
// The file's one number; 0 when absent or not a number ("max").
std::uint64_t read_number(int dir, const char *file);
// The processes in cgroup.procs.
std::vector<pid_t> read_pids(int dir);
// The limits of a cgroup2 call cgroup: memory.max and memory.swap.max 0 (no swap beyond it),
// pids.max.
void write_v2_limits(int dir, const Budget &budget, bool memory, bool pids);
// What a cgroup2 call cgroup counted: memory.events oom_kill, pids.events max, memory.peak.
void read_v2_counts(int dir, bool memory, bool pids, BudgetReport &report);
}  // namespace cgroup_files

}  // namespace tea::exec
