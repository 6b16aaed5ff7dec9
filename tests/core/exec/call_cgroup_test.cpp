// A call's cgroup: where the runtime finds its own cgroups, the file protocol of cgroup2 (on plain
// files, since this project's test hosts may give cgroup2 no controller), and real cgroups where
// the host has them: cgroup2 without controllers (making, joining, cgroup.kill, removal) and
// cgroup v1 (the pids budget, the freezer's kill, the reclaim of a killed runtime's cgroups).
#include "exec/call_cgroup.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "support/temp_dir.hpp"
#include "util/fd.hpp"

namespace tea::exec {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string slurp(const fs::path &p) {
    std::ifstream in{p};
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void put(const fs::path &p, const std::string &text) {
    std::ofstream{p} << text;
}

// ---- where the runtime's own cgroups are ----

constexpr const char *hybrid_mountinfo =
    "25 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
    "30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "32 30 0:28 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "33 30 0:29 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "34 30 0:30 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "35 30 0:31 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n";

TEST(OwnCgroups, AHybridHostGivesEachV1ControllerItsDirectoryAndTheUnifiedOne) {
    const auto own = parse_own_cgroups(hybrid_mountinfo,
                                       "8:pids:/\n6:freezer:/\n4:memory:/process_api/abc\n"
                                       "1:cpu:/\n0::/\n");
    EXPECT_EQ(own.v2, "/sys/fs/cgroup/unified");
    EXPECT_TRUE(own.v2_is_root);
    EXPECT_EQ(own.v1.at("memory"), "/sys/fs/cgroup/memory/process_api/abc");
    EXPECT_EQ(own.v1.at("pids"), "/sys/fs/cgroup/pids");
    EXPECT_EQ(own.v1.at("freezer"), "/sys/fs/cgroup/freezer");
    EXPECT_EQ(own.v1.count("rw"), 0U);  // a mount option, not a controller of this process
}

TEST(OwnCgroups, AUserScopeOnAUnifiedHostIsFoundBeneathTheMount) {
    const auto own = parse_own_cgroups(
        "40 25 0:27 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
        "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-u7.scope\n");
    EXPECT_EQ(own.v2,
              "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/"
              "run-u7.scope");
    EXPECT_FALSE(own.v2_is_root);
    EXPECT_TRUE(own.v1.empty());
}

TEST(OwnCgroups, AMountOfASubtreeShowsOnlyTheCgroupsBeneathItsRoot) {
    constexpr const char *subtree = "40 25 0:27 /a/b /mnt/cg\\040x rw - cgroup2 cgroup2 rw\n";
    EXPECT_EQ(parse_own_cgroups(subtree, "0::/a/b/c\n").v2, "/mnt/cg x/c");
    EXPECT_EQ(parse_own_cgroups(subtree, "0::/a/b\n").v2, "/mnt/cg x");
    EXPECT_TRUE(parse_own_cgroups(subtree, "0::/a/other\n").v2.empty());
    EXPECT_TRUE(parse_own_cgroups("", "0::/\n").v2.empty());  // no cgroup2 mounted
}

// ---- the cgroup2 file protocol, on plain files ----

TEST(CgroupFiles, TheV2LimitsAreWrittenAsTheKernelTakesThem) {
    const test::TempDir dir{"tea-cgroup-files"};
    for (const char *file : {"memory.max", "memory.swap.max", "pids.max"}) {
        put(dir / file, "");
    }
    const UniqueFd fd{::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    cgroup_files::write_v2_limits(fd.get(), Budget{64U << 20U, 32, true}, true, true);
    EXPECT_EQ(slurp(dir / "memory.max"), "67108864");
    EXPECT_EQ(slurp(dir / "memory.swap.max"), "0");  // no swap beyond the budget
    EXPECT_EQ(slurp(dir / "pids.max"), "32");

    // A host without swap accounting has no memory.swap.max: nothing is made in its place.
    fs::remove(dir / "memory.swap.max");
    put(dir / "pids.max", "max\n");
    cgroup_files::write_v2_limits(fd.get(), Budget{1U << 30U, 8, true}, true, false);
    EXPECT_EQ(slurp(dir / "memory.max"), "1073741824");
    EXPECT_FALSE(fs::exists(dir / "memory.swap.max"));
    EXPECT_EQ(slurp(dir / "pids.max"), "max\n");  // the pids controller is not the call's

    // A file the kernel does not have is an error that names it.
    fs::remove(dir / "memory.max");
    try {
        cgroup_files::write_v2_limits(fd.get(), Budget{64U << 20U, 0, true}, true, false);
        ADD_FAILURE() << "no error for a missing memory.max";
    } catch (const std::exception &e) {
        EXPECT_NE(std::string{e.what()}.find("memory.max"), std::string::npos) << e.what();
    }
}

TEST(CgroupFiles, TheV2CountsAreReadFromTheEventFiles) {
    const test::TempDir dir{"tea-cgroup-files"};
    put(dir / "memory.events", "low 0\nhigh 0\nmax 31\noom 2\noom_kill 2\noom_group_kill 0\n");
    put(dir / "pids.events", "max 7\n");
    put(dir / "memory.peak", "123456\n");
    put(dir / "cgroup.procs", "12\n345\n");
    const UniqueFd fd{::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    BudgetReport report;
    cgroup_files::read_v2_counts(fd.get(), true, true, report);
    EXPECT_EQ(report.oom_kills, 2U);  // oom_kill, not oom (a limit reached) or max
    EXPECT_EQ(report.refused_forks, 7U);
    EXPECT_EQ(report.memory_peak_bytes, 123456U);
    EXPECT_EQ(cgroup_files::read_pids(fd.get()), (std::vector<pid_t>{12, 345}));

    // A kernel without memory.peak (before 5.19) leaves the peak unknown.
    fs::remove(dir / "memory.peak");
    BudgetReport older;
    cgroup_files::read_v2_counts(fd.get(), true, false, older);
    EXPECT_EQ(older.memory_peak_bytes, 0U);
    EXPECT_EQ(older.refused_forks, 0U);  // the pids controller was not the call's
}

// ---- real cgroups ----

std::string own_file(const char *name) {
    return slurp(std::string{"/proc/self/"} + name);
}

// A process that joins the cgroup through `join` (as the runner's child does) and runs `script`.
pid_t start_in(const std::vector<int> &join, const std::string &script) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        for (const int fd : join) {
            if (::write(fd, "0", 1) != 1) {
                ::_exit(125);
            }
        }
        ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char *>(nullptr));
        ::_exit(127);
    }
    return pid;
}

// The one call cgroup beneath `parent` whose name holds `mark`.
std::string pid_namespace() {
    struct stat st {};
    ::stat("/proc/self/ns/pid", &st);
    return std::to_string(st.st_ino);
}

fs::path call_cgroup_in(const fs::path &parent) {
    for (const auto &e : fs::directory_iterator(parent)) {
        const auto name = e.path().filename().string();
        if (name.rfind("tea-call-" + pid_namespace() + "-" + std::to_string(::getpid()) + "-", 0) ==
            0) {
            return e.path();
        }
    }
    return {};
}

std::size_t members(const fs::path &cgroup) {
    std::size_t n = 0;
    std::istringstream in{slurp(cgroup / "cgroup.procs")};
    for (std::string line; std::getline(in, line);) {
        n += line.empty() ? 0U : 1U;
    }
    return n;
}

bool eventually(const std::function<bool()> &done, std::chrono::milliseconds bound = 10s) {
    const auto until = std::chrono::steady_clock::now() + bound;
    while (!done()) {
        if (std::chrono::steady_clock::now() > until) {
            return false;
        }
        std::this_thread::sleep_for(10ms);
    }
    return true;
}

TEST(CallCgroup, OnCgroup2ItsProcessesJoinItAndCgroupKillEndsThemAll) {
    const auto own = parse_own_cgroups(own_file("mountinfo"), own_file("cgroup"));
    if (::geteuid() != 0 || own.v2.empty() || ::access(own.v2.c_str(), W_OK) != 0) {
        GTEST_SKIP() << "needs root and a cgroup2 hierarchy";
    }
    // A parent of its own beneath the runtime's cgroup2 cgroup; no controller is needed to make,
    // join, kill and remove a cgroup.
    const auto parent = own.v2 / ("tea-test-" + std::to_string(::getpid()));
    ASSERT_EQ(::mkdir(parent.c_str(), 0755), 0) << parent;
    CgroupLayout layout;
    layout.v2_parent = parent;
    {
        CallCgroup cgroup{layout, Budget{64U << 20U, 16, true}};
        // Without the controllers the budgets stay with the resource limits.
        EXPECT_EQ(cgroup.report().memory, Enforcement::rlimit);
        EXPECT_EQ(cgroup.report().processes, Enforcement::rlimit);
        const auto dir = call_cgroup_in(parent);
        ASSERT_FALSE(dir.empty());
        const pid_t leader = start_in(cgroup.join_fds(), "sleep 1000 & exec sleep 1000");
        // The control: both are there, and alive, until the cgroup ends them.
        ASSERT_TRUE(eventually([&] { return members(dir) == 2; })) << slurp(dir / "cgroup.procs");
        EXPECT_EQ(::kill(leader, 0), 0);
        const auto report = cgroup.end();
        EXPECT_EQ(report.left_killed, 2U);
        int status = 0;
        ASSERT_EQ(::waitpid(leader, &status, 0), leader);
        EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
        EXPECT_FALSE(fs::exists(dir)) << "the call's cgroup is removed";
    }
    EXPECT_EQ(::rmdir(parent.c_str()), 0) << "nothing of the call is left beneath its parent";
}

CgroupLayout v1_layout() {
    const auto own = parse_own_cgroups(own_file("mountinfo"), own_file("cgroup"));
    CgroupLayout layout;
    for (const auto &[controller, slot] :
         {std::pair{"pids", &layout.v1_pids}, std::pair{"freezer", &layout.v1_freezer},
          std::pair{"memory", &layout.v1_memory}}) {
        const auto it = own.v1.find(controller);
        if (it != own.v1.end() && ::access(it->second.c_str(), W_OK) == 0) {
            *slot = it->second;
        }
    }
    return layout;
}

TEST(CallCgroup, OnCgroup1ThePidsBudgetRefusesForksAndTheFreezerEndsAForkLoop) {
    const auto layout = v1_layout();
    if (layout.v1_pids.empty() || layout.v1_freezer.empty()) {
        GTEST_SKIP() << "needs the cgroup v1 pids and freezer hierarchies, writable";
    }
    CallCgroup cgroup{layout, Budget{0, 8, true}};
    EXPECT_EQ(cgroup.report().processes, Enforcement::cgroup_v1);
    const auto dir = call_cgroup_in(layout.v1_pids);
    ASSERT_FALSE(dir.empty());
    EXPECT_EQ(slurp(dir / "pids.max"), "8\n");
    // A loop that forks until the kernel refuses at 8 (dash then gives up, leaving its children).
    const pid_t leader = start_in(cgroup.join_fds(), "while :; do sleep 1000 & done 2>/dev/null");
    ASSERT_TRUE(eventually([&] { return slurp(dir / "pids.events") != "max 0\n"; }))
        << slurp(dir / "pids.events");
    ::waitpid(leader, nullptr, 0);
    const auto left = members(dir);
    EXPECT_GE(left, 6U);
    EXPECT_LE(left, 8U);
    const auto report = cgroup.end();
    EXPECT_GT(report.refused_forks, 0U);
    EXPECT_EQ(report.left_killed, left);
    for (const auto &parent : {layout.v1_pids, layout.v1_freezer}) {
        EXPECT_TRUE(call_cgroup_in(parent).empty()) << parent;
    }
}

// "tea-call-<pid namespace>-<pid>-<start>-<suffix>" of a process that has ended, in this pid
// namespace or (`other_namespace`) in one it cannot look the pid up in.
std::string dead_owner_name(bool other_namespace = false) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::_exit(0);
    }
    ::usleep(10000);  // exited, not reaped: its stat is still there
    const auto stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    ::waitpid(pid, nullptr, 0);
    std::istringstream fields{stat.substr(stat.rfind(')') + 2)};
    std::string field;
    for (int i = 3; i <= 22; ++i) {
        fields >> field;
    }
    return "tea-call-" + (other_namespace ? std::string{"1"} : pid_namespace()) + "-" +
           std::to_string(pid) + "-" + field + "-test";
}

TEST(CallCgroup, TheCgroupOfAKilledRuntimeIsEmptiedAndRemovedAndALiveOnesIsLeft) {
    const auto layout = v1_layout();
    if (layout.v1_pids.empty()) {
        GTEST_SKIP() << "needs the cgroup v1 pids hierarchy, writable";
    }
    // A parent of its own: a runtime started meanwhile (by another test) reclaims the killed
    // runtimes' cgroups beside its own, this test's made-up one among them, before the test does.
    const auto parent = layout.v1_pids / ("tea-test-" + std::to_string(::getpid()));
    ASSERT_EQ(::mkdir(parent.c_str(), 0755), 0) << parent;
    CgroupLayout pids_only;
    pids_only.v1_pids = parent;
    const auto stale = parent / dead_owner_name();
    ASSERT_EQ(::mkdir(stale.c_str(), 0755), 0) << stale;
    const UniqueFd stale_procs{::open((stale / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC)};
    const pid_t left = start_in({stale_procs.get()}, "exec sleep 1000");
    ASSERT_TRUE(eventually([&] { return members(stale) == 1; }));
    // The control: a live runtime's call cgroup (this process's), holding a process too.
    CallCgroup live{pids_only, Budget{0, 16, true}};
    const auto live_dir = call_cgroup_in(parent);
    const pid_t kept = start_in(live.join_fds(), "exec sleep 1000");
    ASSERT_TRUE(eventually([&] { return members(live_dir) == 1; }));

    // And one named by a runtime of another pid namespace, whose pids this one cannot judge.
    const auto foreign = parent / dead_owner_name(true);
    ASSERT_EQ(::mkdir(foreign.c_str(), 0755), 0) << foreign;

    EXPECT_EQ(reclaim_call_cgroups(pids_only), 1);
    EXPECT_TRUE(fs::exists(foreign));
    EXPECT_EQ(::rmdir(foreign.c_str()), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(left, &status, 0), left);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    EXPECT_FALSE(fs::exists(stale));
    EXPECT_TRUE(fs::exists(live_dir));
    EXPECT_EQ(::kill(kept, 0), 0) << "a live runtime's call is left running";
    (void)live.end();
    ::waitpid(kept, nullptr, 0);
    EXPECT_EQ(::rmdir(parent.c_str()), 0) << "nothing is left beneath the parent";
}

}  // namespace
}  // namespace tea::exec
