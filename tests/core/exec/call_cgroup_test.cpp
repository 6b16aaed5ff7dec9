// A call's cgroup: where the runtime finds its own cgroups, the file protocol of cgroup2 (on plain
// files, since this project's test hosts may give cgroup2 no controller), and real cgroups where
// the host has them: cgroup2 without controllers (making, joining, cgroup.kill, removal, the
// reclaim of a killed runtime's cgroups), cgroup2 with the memory and pids controllers (the
// budgets held and counted, a cgroup delegated to the runtime; tests/vm boots a guest that has
// them), and cgroup v1 (the pids budget, the freezer's kill, the reclaim).
#include "exec/call_cgroup.hpp"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
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

// Whether this host promises cgroup2 with its controllers to root (TEA_TEST_CALL_CGROUP, which
// tests/vm sets in the guests it boots): a test that needs them fails there instead of skipping.
bool cgroup2_promised() {
    const char *stated = std::getenv("TEA_TEST_CALL_CGROUP");  // NOLINT(concurrency-mt-unsafe)
    return stated != nullptr && std::string{stated} == "cgroup2";
}

#define SKIP_WITHOUT(what)                                            \
    do {                                                              \
        if (cgroup2_promised()) {                                     \
            FAIL() << "TEA_TEST_CALL_CGROUP=cgroup2, but " << (what); \
        }                                                             \
        GTEST_SKIP() << (what);                                       \
    } while (false)

// The root of the cgroup2 mount this process's cgroup lies in: the first ancestor whose parent is
// no cgroup.
fs::path v2_mount_root(fs::path dir) {
    while (dir.has_parent_path() && dir.parent_path() != dir &&
           fs::exists(dir.parent_path() / "cgroup.controllers")) {
        dir = dir.parent_path();
    }
    return dir;
}

bool has_word(const std::string &text, const std::string &word) {
    std::istringstream in{text};
    for (std::string w; in >> w;) {
        if (w == word) {
            return true;
        }
    }
    return false;
}

// A cgroup of the test's own beneath the root of the cgroup2 mount, its children given the memory
// and pids controllers (the root cgroup may hold processes beside children with controllers; the
// test's own cgroup, shared with other processes, may not), removed with everything beneath it.
class V2Subtree {
   public:
    // Empty, with why_not() set, where this host has no such controllers for root.
    explicit V2Subtree(const std::string &name) {
        const auto own = parse_own_cgroups(own_file("mountinfo"), own_file("cgroup"));
        if (::geteuid() != 0 || own.v2.empty()) {
            why_not_ = "needs root and a cgroup2 hierarchy";
            return;
        }
        const auto root = v2_mount_root(own.v2);
        const auto controllers = slurp(root / "cgroup.controllers");
        if (!has_word(controllers, "memory") || !has_word(controllers, "pids")) {
            why_not_ = "needs the memory and pids controllers on cgroup2 (" + root.string() +
                       " has \"" + controllers + "\")";
            return;
        }
        put(root / "cgroup.subtree_control", "+memory +pids");
        path_ = root / (name + "-" + std::to_string(::getpid()));
        if (::mkdir(path_.c_str(), 0755) != 0) {
            why_not_ = "cannot make " + path_.string();
            path_.clear();
            return;
        }
        put(path_ / "cgroup.subtree_control", "+memory +pids");
    }
    V2Subtree(const V2Subtree &) = delete;
    V2Subtree &operator=(const V2Subtree &) = delete;
    ~V2Subtree() {
        if (path_.empty()) {
            return;
        }
        std::vector<fs::path> dirs;
        std::error_code ec;
        for (fs::recursive_directory_iterator it{path_, ec}, end; !ec && it != end;
             it.increment(ec)) {
            if (it->is_directory(ec)) {
                dirs.push_back(it->path());
            }
        }
        for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
            ::rmdir(it->c_str());
        }
        ::rmdir(path_.c_str());
    }
    explicit operator bool() const { return !path_.empty(); }
    [[nodiscard]] const fs::path &path() const { return path_; }
    [[nodiscard]] const std::string &why_not() const { return why_not_; }
    // A layout whose call cgroups are made beneath this subtree with both controllers.
    [[nodiscard]] CgroupLayout layout() const {
        CgroupLayout layout;
        layout.v2_parent = path_;
        layout.v2_memory = true;
        layout.v2_pids = true;
        return layout;
    }

   private:
    fs::path path_;
    std::string why_not_;
};

TEST(CallCgroup, OnCgroup2TheMemoryBudgetIsHeldForTheWholeCallAndTheOomKillCounted) {
    const V2Subtree subtree{"tea-test-memory"};
    if (!subtree) {
        SKIP_WITHOUT(subtree.why_not());
    }
    constexpr std::uint64_t mib = 1U << 20U;
    // Two processes of 40 MiB each: neither alone reaches the budget of 64, the call does.
    const std::string two_of_40 =
        "python3 -c 'import time; b = b\"x\" * (40 << 20); time.sleep(30)' & "
        "exec python3 -c 'import time; time.sleep(1); b = b\"x\" * (40 << 20); time.sleep(30)'";
    CallCgroup cgroup{subtree.layout(), Budget{64 * mib, 0, true}};
    EXPECT_EQ(cgroup.report().memory, Enforcement::cgroup_v2);
    EXPECT_TRUE(cgroup.report().cgroup_unavailable.empty()) << cgroup.report().cgroup_unavailable;
    const auto dir = call_cgroup_in(subtree.path());
    ASSERT_FALSE(dir.empty());
    EXPECT_EQ(slurp(dir / "memory.max"), std::to_string(64 * mib) + "\n");
    if (fs::exists(dir / "memory.swap.max")) {
        EXPECT_EQ(slurp(dir / "memory.swap.max"), "0\n");  // no swap beyond the budget
    }
    const pid_t leader = start_in(cgroup.join_fds(), two_of_40);
    // Bounded for a slow guest: tests/vm may run under an emulator.
    ASSERT_TRUE(eventually(
        [&] { return slurp(dir / "memory.events").find("oom_kill 0") == std::string::npos; }, 60s))
        << slurp(dir / "memory.events");
    const auto report = cgroup.end();
    EXPECT_GE(report.oom_kills, 1U);
    EXPECT_GE(report.memory_peak_bytes, 40 * mib);  // memory.peak (Linux 5.19)
    EXPECT_LE(report.memory_peak_bytes, 64 * mib);
    ::waitpid(leader, nullptr, 0);
    EXPECT_FALSE(fs::exists(dir));

    // The control: under a budget of 256 MiB the same two hold their 80 until the call ends them.
    CallCgroup roomy{subtree.layout(), Budget{256 * mib, 0, true}};
    const auto roomy_dir = call_cgroup_in(subtree.path());
    const pid_t roomy_leader = start_in(roomy.join_fds(), two_of_40);
    ASSERT_TRUE(eventually(
        [&] { return std::stoull("0" + slurp(roomy_dir / "memory.current")) >= 80 * mib; }, 60s))
        << slurp(roomy_dir / "memory.current");
    const auto roomy_report = roomy.end();
    EXPECT_EQ(roomy_report.oom_kills, 0U);
    EXPECT_EQ(roomy_report.left_killed, 2U);
    int status = 0;
    ASSERT_EQ(::waitpid(roomy_leader, &status, 0), roomy_leader);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
}

TEST(CallCgroup, OnCgroup2ThePidsBudgetRefusesForksAndCgroupKillEndsAForkBomb) {
    const V2Subtree subtree{"tea-test-pids"};
    if (!subtree) {
        SKIP_WITHOUT(subtree.why_not());
    }
    CallCgroup cgroup{subtree.layout(), Budget{0, 8, true}};
    EXPECT_EQ(cgroup.report().processes, Enforcement::cgroup_v2);
    const auto dir = call_cgroup_in(subtree.path());
    ASSERT_FALSE(dir.empty());
    EXPECT_EQ(slurp(dir / "pids.max"), "8\n");
    // A fork bomb whose every process forks again for as long as it lives, whatever the kernel
    // refuses: cgroup.kill ends it and all it made at once.
    const pid_t leader = start_in(cgroup.join_fds(),
                                  "exec python3 -c 'import os\nwhile True:\n    try:\n"
                                  "        os.fork()\n    except OSError:\n        pass'");
    ASSERT_TRUE(eventually([&] { return slurp(dir / "pids.events") != "max 0\n"; }))
        << slurp(dir / "pids.events");
    EXPECT_LE(members(dir), 8U);
    const auto report = cgroup.end();
    EXPECT_GT(report.refused_forks, 0U);
    EXPECT_GE(report.left_killed, 6U);
    int status = 0;
    ASSERT_EQ(::waitpid(leader, &status, 0), leader);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    EXPECT_FALSE(fs::exists(dir));
}

// A runtime started in `cgroup`: as whom, and what else is there.
struct RuntimeIn {
    uid_t uid = 0;
    gid_t gid = 0;
    bool companion = false;         // another process of the cgroup beside it (a shell, say)
    bool cgroup_namespace = false;  // the cgroup is the root of its cgroup namespace (a container)
};

// What host_cgroup_layout() finds in a child of this process started as `runtime` says in
// `cgroup`: the call cgroups' parent, its controllers, why it has none, the child's own cgroup
// afterwards, and, with a parent, how a call's process fared joining a call cgroup with a
// process budget. Found once per process, so in a child: this test program never finds its own.
struct FoundLayout {
    std::string parent;
    bool memory = false;
    bool pids = false;
    std::string why_not;
    std::string own_after;
    std::string joined;
};

// In the child: the call's process joins a call cgroup of `layout`; "joined" or why not.
std::string join_a_call(const CgroupLayout &layout) {
    try {
        CallCgroup cgroup{layout, Budget{0, 8, true}};
        const pid_t call = start_in(cgroup.join_fds(), "exit 0");
        int status = 0;
        ::waitpid(call, &status, 0);
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "joined" : "the call could not join";
    } catch (const std::exception &e) {
        return e.what();
    }
}

FoundLayout layout_found_in(const fs::path &cgroup, const RuntimeIn &runtime) {
    pid_t other = -1;
    if (runtime.companion) {
        const UniqueFd procs{::open((cgroup / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC)};
        other = start_in({procs.get()}, "exec sleep 1000");
        EXPECT_TRUE(eventually([&] { return members(cgroup) == 1; }));
    }
    const test::TempDir out_dir{"tea-cgroup-layout", fs::perms{0777}};
    const auto out = out_dir / "layout";
    const pid_t child = ::fork();
    if (child == 0) {
        std::ofstream{cgroup / "cgroup.procs"} << "0";
        if (runtime.cgroup_namespace &&
            (::unshare(CLONE_NEWCGROUP | CLONE_NEWNS) != 0 ||
             ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
             ::umount2("/sys/fs/cgroup", MNT_DETACH) != 0 ||
             ::mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, nullptr) != 0)) {
            ::_exit(124);
        }
        if (::setresgid(runtime.gid, runtime.gid, runtime.gid) != 0 ||
            ::setgroups(0, nullptr) != 0 ||
            ::setresuid(runtime.uid, runtime.uid, runtime.uid) != 0) {
            ::_exit(125);
        }
        const auto &found = host_cgroup_layout();
        std::ofstream{out} << found.v2_parent.string() << '\n'
                           << found.v2_memory << found.v2_pids << '\n'
                           << found.why_not << '\n'
                           << slurp("/proc/self/cgroup")
                           << (found.v2_parent.empty() ? "" : join_a_call(found)) << '\n';
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (other > 0) {
        ::kill(other, SIGKILL);
        ::waitpid(other, nullptr, 0);
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    std::istringstream in{slurp(out)};
    FoundLayout found;
    std::string flags;
    std::getline(in, found.parent);
    std::getline(in, flags);
    std::getline(in, found.why_not);
    std::getline(in, found.own_after);
    std::getline(in, found.joined);
    found.memory = flags.size() == 2 && flags[0] == '1';
    found.pids = flags.size() == 2 && flags[1] == '1';
    return found;
}

// A cgroup made at `path` and delegated to `user` as systemd delegates one (Delegate=yes): the
// directory and the files that move processes and enable controllers are the user's.
::testing::AssertionResult delegated_cgroup(const fs::path &path, uid_t user) {
    if (::mkdir(path.c_str(), 0755) != 0) {
        return ::testing::AssertionFailure() << "cannot make " << path;
    }
    for (const auto &p :
         {path, path / "cgroup.procs", path / "cgroup.subtree_control", path / "cgroup.threads"}) {
        if (::chown(p.c_str(), user, user) != 0) {
            return ::testing::AssertionFailure() << "cannot hand " << p << " to " << user;
        }
    }
    return ::testing::AssertionSuccess();
}

TEST(CallCgroup, ACgroup2CgroupDelegatedToTheRuntimeAloneGivesItsCallsTheControllers) {
    const V2Subtree subtree{"tea-test-delegated"};
    if (!subtree) {
        SKIP_WITHOUT(subtree.why_not());
    }
    constexpr uid_t user = 64993;
    const auto delegated = subtree.path() / "delegated";
    ASSERT_TRUE(delegated_cgroup(delegated, user));
    // The runtime alone in it moves into a leaf and makes its calls beside that leaf.
    const auto alone = layout_found_in(delegated, {.uid = user, .gid = user});
    EXPECT_EQ(alone.parent, delegated.string()) << alone.why_not;
    EXPECT_TRUE(alone.memory && alone.pids) << alone.why_not;
    EXPECT_NE(alone.own_after.find(delegated.filename().string() + "/tea-runtime-"),
              std::string::npos)
        << alone.own_after;
    EXPECT_EQ(alone.joined, "joined");

    // The control: with another process in it (a login shell's scope, say), the runtime may not
    // enable a controller beneath it, and says why it has no cgroup.
    const auto shared = subtree.path() / "shared";
    ASSERT_TRUE(delegated_cgroup(shared, user));
    const auto beside = layout_found_in(shared, {.uid = user, .gid = user, .companion = true});
    EXPECT_TRUE(beside.parent.empty()) << beside.parent;
    EXPECT_NE(beside.why_not.find("is not delegated to it alone"), std::string::npos)
        << beside.why_not;
}

TEST(CallCgroup, ACgroup2CgroupGivenNeitherControllerGivesTheCallsNoneAndSaysWhy) {
    const V2Subtree subtree{"tea-test-bare"};
    if (!subtree) {
        SKIP_WITHOUT(subtree.why_not());
    }
    // Delegated to the runtime alone, but beneath a parent that enables no controller for it (a
    // slice whose accounting is off, a container given none): no cgroup can hold a budget.
    constexpr uid_t user = 64993;
    const auto plain = subtree.path() / "plain";
    const auto bare = plain / "bare";
    ASSERT_EQ(::mkdir(plain.c_str(), 0755), 0);
    ASSERT_TRUE(delegated_cgroup(bare, user));
    ASSERT_EQ(slurp(bare / "cgroup.controllers"), "");
    const auto found = layout_found_in(bare, {.uid = user, .gid = user});
    EXPECT_TRUE(found.parent.empty()) << found.parent;
    EXPECT_NE(found.why_not.find(bare.string()), std::string::npos) << found.why_not;
    EXPECT_NE(found.why_not.find("neither the memory nor the pids controller"), std::string::npos)
        << found.why_not;
}

TEST(CallCgroup, TheRootOfACgroupNamespaceThatHoldsOtherProcessesIsNeitherUsedNorChanged) {
    const V2Subtree subtree{"tea-test-container"};
    if (!subtree) {
        SKIP_WITHOUT(subtree.why_not());
    }
    // Root in a container: the root of its cgroup namespace, which its shell shares, is given
    // the controllers. cgroup2 enables a controller beneath a cgroup with processes only at the
    // hierarchy's real root; enabling pids there anyway (a threaded controller, which the kernel
    // allows) makes the cgroup a thread root, in which no cgroup can hold a process again.
    const auto container = subtree.path() / "container";
    ASSERT_EQ(::mkdir(container.c_str(), 0755), 0);
    const auto found = layout_found_in(container, {.companion = true, .cgroup_namespace = true});
    EXPECT_EQ(found.own_after, "0::/") << "the runtime saw its cgroup as the namespace's root";
    EXPECT_TRUE(found.parent.empty()) << found.parent << ": " << found.joined;
    EXPECT_NE(found.why_not.find("holds processes"), std::string::npos) << found.why_not;
    EXPECT_EQ(slurp(container / "cgroup.subtree_control"), "") << "the container's cgroup changed";
    EXPECT_EQ(slurp(container / "cgroup.type"), "domain\n");

    // The control: alone in the same cgroup (the container's first process), the runtime moves
    // into a leaf, and its calls join their cgroups.
    const auto alone = layout_found_in(container, {.cgroup_namespace = true});
    EXPECT_EQ(alone.parent, "/sys/fs/cgroup") << alone.why_not;
    EXPECT_EQ(alone.joined, "joined");
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

// A killed runtime's call cgroup, holding a process, beneath a parent made in `hierarchy` (a
// cgroup v1 pids directory, or a cgroup2 one): emptied and removed by the reclaim, while a live
// runtime's and one of another pid namespace's are left.
void check_reclaim(const fs::path &hierarchy, bool v2) {
    // A parent of its own: a runtime started meanwhile (by another test) reclaims the killed
    // runtimes' cgroups beside its own, this test's made-up one among them, before the test does.
    const auto parent = hierarchy / ("tea-test-" + std::to_string(::getpid()));
    ASSERT_EQ(::mkdir(parent.c_str(), 0755), 0) << parent;
    CgroupLayout layout;
    (v2 ? layout.v2_parent : layout.v1_pids) = parent;
    const auto stale = parent / dead_owner_name();
    ASSERT_EQ(::mkdir(stale.c_str(), 0755), 0) << stale;
    const UniqueFd stale_procs{::open((stale / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC)};
    const pid_t left = start_in({stale_procs.get()}, "sleep 1000 & exec sleep 1000");
    ASSERT_TRUE(eventually([&] { return members(stale) == 2; }));
    // The control: a live runtime's call cgroup (this process's), holding a process too.
    CallCgroup live{layout, Budget{0, 16, true}};
    const auto live_dir = call_cgroup_in(parent);
    const pid_t kept = start_in(live.join_fds(), "exec sleep 1000");
    ASSERT_TRUE(eventually([&] { return members(live_dir) == 1; }));

    // And one named by a runtime of another pid namespace, whose pids this one cannot judge.
    const auto foreign = parent / dead_owner_name(true);
    ASSERT_EQ(::mkdir(foreign.c_str(), 0755), 0) << foreign;

    EXPECT_EQ(reclaim_call_cgroups(layout), 1);
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

TEST(CallCgroup, TheCgroupOfAKilledRuntimeIsEmptiedAndRemovedAndALiveOnesIsLeft) {
    const auto layout = v1_layout();
    if (layout.v1_pids.empty()) {
        GTEST_SKIP() << "needs the cgroup v1 pids hierarchy, writable";
    }
    check_reclaim(layout.v1_pids, false);
}

TEST(CallCgroup, OnCgroup2TheCgroupOfAKilledRuntimeIsKilledWholeAndRemovedAndALiveOnesIsLeft) {
    const auto own = parse_own_cgroups(own_file("mountinfo"), own_file("cgroup"));
    if (::geteuid() != 0 || own.v2.empty() || ::access(own.v2.c_str(), W_OK) != 0) {
        SKIP_WITHOUT("needs root and a cgroup2 hierarchy");
    }
    // cgroup.kill needs no controller: the runtime's own cgroup will do.
    check_reclaim(own.v2, true);
}

}  // namespace
}  // namespace tea::exec
