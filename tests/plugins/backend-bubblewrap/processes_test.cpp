// Processes a target starts: none outlives the call, however it detaches; the call's process
// budget (a pids cgroup of its own) bounds how many it makes without touching another call of
// the same identity; and the file size limit bounds how much it writes.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <tuple>

#include "harness.hpp"
#include "support/process.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The tests that make a hundred processes of the sandbox account, or run calls under a budget of
// 64, take turns: where the budget falls back to RLIMIT_NPROC (no pids cgroup for the runtime, or
// [budgets] cgroup = "off"), that counts every process of the account, so one such test's
// processes would starve the other's bwrap, which then cannot even make its namespaces.
class AccountProcessesTurn {
   public:
    AccountProcessesTurn()
        : fd_{::open((fs::temp_directory_path() / "tea-test-sandbox-processes.lock").c_str(),
                     O_RDWR | O_CREAT | O_CLOEXEC, 0666)} {
        if (fd_ >= 0) {
            ::flock(fd_, LOCK_EX);
        }
    }
    AccountProcessesTurn(const AccountProcessesTurn &) = delete;
    AccountProcessesTurn &operator=(const AccountProcessesTurn &) = delete;
    ~AccountProcessesTurn() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }

   private:
    int fd_;
};

// Waits for `go` to appear, bounded by the call's own timeout.
constexpr const char *wait_for_go = "while [ ! -e go ]; do sleep 0.05; done";

constexpr const char *fork_probe = R"PY(
r, w = os.pipe()
kids = []
def fork_all():
    for i in range(int(sys.argv[1])):
        pid = os.fork()
        if pid == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        kids.append(pid)
    return len(kids)
report("FORK", fork_all)
print("FORKED:" + str(len(kids)), flush=True)
if len(sys.argv) > 2:
    # "hold": say so in the file `full` of the working directory, and keep the children until
    # `go` appears there.
    open("full", "w").close()
    deadline = time.time() + 25
    while not os.path.exists("go") and time.time() < deadline:
        time.sleep(0.05)
os.close(w)
for k in kids:
    os.waitpid(k, 0)
)PY";

// What a started call did: whether every `sleep <marker>` was seen running
// (and as whom) before the target was let go on by creating `go`.
struct Observed {
    Result result;
    bool all_seen = false;
    std::vector<uid_t> owners;
};

// `bound`: how long the markers may take to show.
Observed observe(Process call, const fs::path &go, const std::vector<std::string> &markers,
                 std::chrono::milliseconds bound = std::chrono::seconds{10}) {
    Observed o;
    o.all_seen = eventually(
        [&] {
            for (const auto &m : markers) {
                if (processes_running({"sleep", m}).empty()) {
                    return false;
                }
            }
            return true;
        },
        bound);
    for (const auto &m : markers) {
        for (const pid_t pid : processes_running({"sleep", m})) {
            o.owners.push_back(process_uid(pid));
        }
    }
    if (!go.empty()) {
        make_file(go, "", 0644);
    }
    o.result = call.wait();
    return o;
}

void expect_none_left(const std::vector<std::string> &markers, const Result &r) {
    for (const auto &m : markers) {
        const auto left = processes_running({"sleep", m});
        EXPECT_TRUE(left.empty()) << "sleep " << m << " outlived the call (pid " << left.front()
                                  << ", uid " << process_uid(left.front()) << ")\n"
                                  << r;
        for (const pid_t pid : left) {
            ::kill(pid, SIGKILL);
        }
    }
}

TEST_P(EitherIdentity, SetsidDaemonDoesNotOutliveTheCall) {
    // The positive control for the scan: the same daemon started by the test
    // itself outlives the shell that started it and is found.
    const auto loose = sleep_marker();
    const auto direct = run_direct(
        {"/bin/sh", "-c", "setsid sleep \"$1\" </dev/null >/dev/null 2>&1 &", "sh", loose});
    ASSERT_EQ(direct.status, 0) << direct;
    const bool survived = eventually([&] { return !processes_running({"sleep", loose}).empty(); });
    for (const pid_t pid : processes_running({"sleep", loose})) {
        ::kill(pid, SIGKILL);
    }
    EXPECT_TRUE(survived) << "the scan did not find a daemon started outside tea-evaluate";

    const auto marker = sleep_marker();
    const auto script = std::string{"setsid sleep \"$1\" & "} + wait_for_go;
    // Generous bounds: tests/vm runs this in a guest that QEMU may only emulate, where a call
    // takes many seconds to start; here the daemon shows in well under one.
    const auto o =
        observe(start({.command = {"/bin/sh", "-c", script, "sh", marker}, .timeout_ms = 120000}),
                workspace() / "go", {marker}, std::chrono::seconds{90});
    ASSERT_TRUE(o.all_seen) << "the daemon never ran\n" << o.result;
    EXPECT_EQ(o.owners, std::vector<uid_t>{sandbox_uid()});
    EXPECT_EQ(o.result.status, 0) << o.result;
    expect_none_left({marker}, o.result);
}

TEST_F(Confinement, DoubleForkedGrandchildDoesNotOutliveTheCall) {
    const auto marker = sleep_marker();
    const auto script = std::string{"( (sleep \"$1\" &) & ); "} + wait_for_go;
    for (const auto backend : {Backend::bubblewrap, Backend::opt_out}) {
        fs::remove(workspace() / "go");
        const auto o = observe(start({.backend = backend,
                                      .command = {"/bin/sh", "-c", script, "sh", marker},
                                      .timeout_ms = 30000}),
                               workspace() / "go", {marker});
        ASSERT_TRUE(o.all_seen) << o.result;
        EXPECT_EQ(o.result.status, 0) << o.result;
        expect_none_left({marker}, o.result);
    }
}

TEST_F(Confinement, ProcessesLeftByATimedOutTargetAreEnded) {
    const auto child = sleep_marker();
    const auto grandchild = sleep_marker();
    // A background grandchild and a foreground child, both still running at the timeout.
    const auto script = std::string{"sh -c 'sleep \"$1\" & wait' sh \"$1\" & sleep \"$2\""};
    const auto o = observe(
        start({.command = {"/bin/sh", "-c", script, "sh", grandchild, child}, .timeout_ms = 2500}),
        {}, {grandchild, child});
    ASSERT_TRUE(o.all_seen) << o.result;
    EXPECT_EQ(o.result.status, 124) << o.result;
    EXPECT_LT(o.result.elapsed, 10s) << o.result;
    expect_none_left({grandchild, child}, o.result);
}

// The call's record: all exec --json prints on stdout.
nlohmann::json record_of(const Result &r) {
    return nlohmann::json::parse(r.out, nullptr, false);
}

// What the call's record names as the enforcer of its process budget; empty without a record.
std::string processes_enforced_by(const Result &r) {
    const auto record = record_of(r);
    return record.is_object() ? record["budget"].value("processesEnforcedBy", "") : "";
}

bool by_cgroup(const std::string &by) {
    return by == "cgroup1" || by == "cgroup2";
}

// The calls below under each backend: the view builder's or the holder's sandbox (the suite runs
// once audited, once with --observer none), the helper as the sandbox's first process (an
// environment bwrap cannot set keeps it in front of the target), and opt-out.
std::vector<Call> every_way_to_run(const Call &call, const std::vector<std::string> &base_env) {
    auto launched = call;
    launched.exact_env = base_env;
    launched.exact_env->emplace_back("TEA-NO-EQUALS-SIGN");
    auto opted_out = call;
    opted_out.backend = Backend::opt_out;
    return {call, launched, opted_out};
}

TEST_P(EitherIdentity, AtItsTimeoutTheTargetsTermHandlerRunsAndTheCallEndsWithIt) {
    // A grace far longer than the handler needs: a call that ends well within it was ended by its
    // target, not by the SIGKILL at the grace's end.
    const Call call{.command = {"/bin/sh", "-c", "trap 'echo got > marker; exit 0' TERM; sleep 60"},
                    .timeout_ms = 1000,
                    .config = "[call]\nkill_grace_ms = 30000\n",
                    .options = {"--json"}};
    for (const auto &each : every_way_to_run(call, base_env())) {
        fs::remove(workspace() / "marker");
        const auto r = run(each);
        EXPECT_EQ(r.status, 124) << r;
        EXPECT_EQ(read_file((workspace() / "marker").string()), "got\n")
            << "the target's SIGTERM handler did not run\n"
            << r;
        EXPECT_LT(r.elapsed, 15s) << r;
        const auto record = record_of(r);
        ASSERT_TRUE(record.is_object()) << r;
        EXPECT_TRUE(record["timedOut"].get<bool>()) << r;
        EXPECT_EQ(record["exitCode"], 0) << "the target's own status is recorded\n" << r;
    }
}

TEST_P(EitherIdentity, ATargetThatIgnoresTermIsKilledWhenItsGraceEnds) {
    for (auto each : every_way_to_run(
             {.timeout_ms = 1000, .config = "[call]\nkill_grace_ms = 2000\n"}, base_env())) {
        const auto marker = sleep_marker();
        // The shell ignores SIGTERM, and so does the sleep it starts.
        each.command = {"/bin/sh", "-c", "trap '' TERM; sleep \"$1\"", "sh", marker};
        const auto o = observe(start(each), {}, {marker});
        ASSERT_TRUE(o.all_seen) << o.result;
        EXPECT_EQ(o.result.status, 124) << o.result;
        // The whole grace was given, and no more than it.
        EXPECT_GE(o.result.elapsed, 3s) << o.result;
        EXPECT_LT(o.result.elapsed, 20s) << o.result;
        expect_none_left({marker}, o.result);
    }
}

TEST_F(Confinement, ProcessBudgetIsWhatStopsForking) {
    const AccountProcessesTurn turn;
    // A budget of 64 refuses the 100 children that 4096 allows, and the record names the hit.
    // Audited, where the observer counts in the budget too: its own fork comes first.
    const auto low = run({.command = python(fork_probe, {"100"}),
                          .config = "[budgets]\nprocesses = 64\n",
                          .options = {"--json"}});
    const auto high = run({.command = python(fork_probe, {"100"}),
                           .config = "[budgets]\nprocesses = 4096\n",
                           .options = {"--json"}});
    EXPECT_TRUE(target_output(low).has("FORK-DENIED:EAGAIN")) << low;
    EXPECT_EQ(target_output(high).value("FORK-OK"), "100") << high;
    const auto record = record_of(low);
    ASSERT_TRUE(record.is_object()) << low;
    EXPECT_EQ(record["budget"]["processes"], 64) << low;
    const auto by = processes_enforced_by(low);
    EXPECT_TRUE(enforced_as_expected(by)) << low;
    if (by_cgroup(by)) {
        // The call's own pids cgroup: it counted the refusals. (A runtime without a cgroup it may
        // write falls back to RLIMIT_NPROC, which counts nothing.)
        ASSERT_FALSE(record["budgetHits"].empty()) << low;
        EXPECT_EQ(record["budgetHits"][0]["budget"], "processes") << low;
        EXPECT_GT(record["budgetHits"][0]["count"].get<int>(), 0) << low;
    }
    EXPECT_TRUE(record_of(high)["budgetHits"].empty()) << high;
}

TEST_F(Confinement, AProcessBudgetAtItsLimitLeavesAnotherCallOfTheSameIdentityAlone) {
    const AccountProcessesTurn turn;
    const auto attempt = [&](const std::string &config) {
        for (const char *name : {"full", "go"}) {
            fs::remove(workspace() / name);
        }
        // Both calls run as the one sandbox identity (no uid_range, whatever a layer set: one
        // identity per call would part the two under the stand-in as well); the first fills its
        // budget and holds it.
        const auto shared = "[confinement]\nuid_range = []\n" + config;
        auto filler = start({.command = python(fork_probe, {"10000", "hold"}),
                             .timeout_ms = 30000,
                             .config = shared,
                             .options = {"--observer", "none"}});
        const bool filled = eventually([&] { return fs::exists(workspace() / "full"); }, 20s);
        const auto second = run({.command = python(fork_probe, {"30"}),
                                 .timeout_ms = 20000,
                                 .config = shared,
                                 .options = {"--observer", "none", "--json"}});
        make_file(workspace() / "go", "", 0644);
        auto first = filler.wait();
        return std::tuple{filled, std::move(first), second};
    };
    // The per-call pids cgroup: the second call forks all 30 while the first sits at its 64.
    const auto [filled, first, second] = attempt("[budgets]\nprocesses = 64\n");
    ASSERT_TRUE(filled) << first;
    EXPECT_TRUE(first.has("FORK-DENIED:EAGAIN")) << first;
    const auto by = processes_enforced_by(second);
    EXPECT_TRUE(enforced_as_expected(by)) << second;
    if (by_cgroup(by)) {
        EXPECT_EQ(target_output(second).value("FORK-OK"), "30") << second;
    }
    // The control, the same two calls with the budget as RLIMIT_NPROC (what a runtime without a
    // cgroup gives every call): the limit counts the identity's processes on the whole host, so
    // the first call's 64 starve the second, whose forks (or whose bwrap's own) the kernel
    // refuses.
    const auto [filled_rlimit, first_rlimit, starved] =
        attempt("[budgets]\nprocesses = 64\ncgroup = \"off\"\n");
    ASSERT_TRUE(filled_rlimit) << first_rlimit;
    EXPECT_EQ(processes_enforced_by(starved), "rlimit") << starved;
    EXPECT_FALSE(target_output(starved).has("FORK-OK:30")) << starved;
}

TEST_F(Confinement, ABwrapThatCannotMakeItsNamespacesFailsTheHostNotTheTarget) {
    const AccountProcessesTurn turn;
    // A budget of 1: bwrap is the call's one process, and cannot clone the sandbox. Unaudited, so
    // only the plan's setup mark can tell this from the target failing.
    const auto starved = run({.command = {"/bin/sh", "-c", "echo TARGET-RAN"},
                              .config = "[budgets]\nprocesses = 1\n",
                              .options = {"--observer", "none", "--json"}});
    EXPECT_EQ(starved.status, 12) << starved;
    EXPECT_FALSE(starved.has("TARGET-RAN")) << starved;
    EXPECT_NE(starved.err.find("before the target started, twice"), std::string::npos) << starved;
    EXPECT_NE(starved.out.find(R"("targetStarted":false)"), std::string::npos) << starved;
    // The control: under the same mechanism a target that fails by itself keeps its status.
    const auto own = run({.command = {"/bin/sh", "-c", "echo TARGET-RAN; exit 1"},
                          .options = {"--observer", "none", "--json"}});
    EXPECT_EQ(own.status, 1) << own;
    EXPECT_NE(own.err.find("TARGET-RAN"), std::string::npos) << own;
    EXPECT_NE(own.out.find(R"("targetStarted":true)"), std::string::npos) << own;
}

TEST_F(Confinement, ForkBombEndsWithTheCallAndTheHostIsFine) {
    const AccountProcessesTurn turn;
    // Only with the limit shown to hold, by what this host gives the call, is a bomb started.
    const auto limit = run({.command = python(fork_probe, {"100"}),
                            .config = "[budgets]\nprocesses = 64\n",
                            .options = {"--observer", "none", "--json"}});
    ASSERT_TRUE(target_output(limit).has("FORK-DENIED:EAGAIN"))
        << "the process budget does not hold\n"
        << limit;
    const auto by = processes_enforced_by(limit);
    ASSERT_TRUE(enforced_as_expected(by)) << limit;

    const auto marker = "tea-bomb-" + random_token();
    // The shell forks exactly once, before any process of the bomb exists, and then becomes the
    // sleep: a second fork of its own (`b; ...` forks one child per element of the pipeline
    // `b|b&`) would race the bomb for the last process the limit allows and end the call with the
    // shell's status 2 instead.
    const auto bomb = run({.command = {"/bin/sh", "-c", "b(){ b|b& }; b & exec sleep 30", marker},
                           .timeout_ms = 5000,
                           .config = "[budgets]\nprocesses = 64\n",
                           .options = {"--observer", "none", "--json"}});
    EXPECT_EQ(bomb.status, 124) << bomb;
    if (by_cgroup(by)) {
        // The kernel counted the forks it refused at the call's pids.max.
        EXPECT_GT(record_of(bomb)["budget"].value("refusedForks", 0), 0) << bomb;
    }
    // The timeout, the kill grace and some slack for a loaded machine.
    EXPECT_LT(bomb.elapsed, 20s) << bomb;
    EXPECT_TRUE(eventually([&] { return processes_with(marker).empty(); }, 2s))
        << processes_with(marker).size() << " processes of the bomb are left";
    const auto after = run_direct({"/bin/true"});
    EXPECT_EQ(after.status, 0) << after;
}

// A runtime killed outright ends nothing itself. What its call left running past that, which
// only the call's cgroup still holds (a daemon of a call under opt-out, which confines nothing:
// its first process dies with the runtime, nothing else does), is ended by the next runtime's
// first budgeted call, which empties the cgroups of runtimes that are gone (cgroup2's
// cgroup.kill, or the v1 freezer) and removes them.
TEST_F(Confinement, WhatACallLeftPastAKilledRuntimeIsEndedByTheNextRuntimesCgroupReclaim) {
    if (std::getenv("TEA_TEST_RUNTIME_WRAPPER") != nullptr) {  // NOLINT(concurrency-mt-unsafe)
        GTEST_SKIP() << "each runtime has a scope of its own here (TEA_TEST_RUNTIME_WRAPPER), and "
                        "a runtime reclaims only beneath its own parent (docs/confinement.md, "
                        "Budgets)";
    }
    const auto left_by_a_killed_runtime = [&](const std::string &config) {
        const auto marker = sleep_marker();
        auto call = start({.backend = Backend::opt_out,
                           .command = {"/bin/sh", "-c",
                                       "setsid sleep \"$1\" </dev/null >/dev/null 2>&1 & "
                                       "exec sleep 1000",
                                       "sh", marker},
                           .config = config});
        const bool daemon_up = eventually([&] {
            return !processes_running({"sleep", marker}).empty();
        });
        ::kill(call.pid(), SIGKILL);
        const auto killed = call.wait();
        const bool outlived = !eventually(
            [&] {
                return processes_running({"sleep", marker}).empty();
            },
            300ms);
        const auto next = run({.backend = Backend::opt_out,
                               .command = {"/bin/true"},
                               .config = config,
                               .options = {"--json"}});
        return std::tuple{marker, daemon_up && outlived, killed, next};
    };
    const auto budget = std::string{"[budgets]\nprocesses = 64\n"};

    const auto [marker, outlived, killed, next] = left_by_a_killed_runtime(budget);
    ASSERT_TRUE(outlived) << "the daemon never ran, or did not outlive its runtime\n" << killed;
    EXPECT_EQ(next.status, 0) << next;
    const auto by = processes_enforced_by(next);
    EXPECT_TRUE(enforced_as_expected(by)) << next;
    if (by_cgroup(by)) {
        EXPECT_TRUE(eventually(
            [&marker = marker] {  // a binding is named in a capture (Clang 14)
                return processes_running({"sleep", marker}).empty();
            },
            5s))
            << "the killed runtime's call kept running past the next runtime's call\n"
            << next;
    }
    for (const pid_t pid : processes_running({"sleep", marker})) {
        ::kill(pid, SIGKILL);  // a runtime without a cgroup left it, as the control shows
    }

    // The control: without a cgroup for the call, nothing ends the daemon.
    const auto [left, outlived_off, killed_off, next_off] =
        left_by_a_killed_runtime(budget + "cgroup = \"off\"\n");
    ASSERT_TRUE(outlived_off) << killed_off;
    EXPECT_EQ(next_off.status, 0) << next_off;
    EXPECT_FALSE(eventually(
        [&left = left] {
            return processes_running({"sleep", left}).empty();
        },
        500ms))
        << next_off;
    for (const pid_t pid : processes_running({"sleep", left})) {
        ::kill(pid, SIGKILL);
    }
}

TEST_F(Confinement, FileSizeLimitStopsADiskFillingWrite) {
    const auto probe = python(R"PY(
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
def write(path, size):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        left = size
        while left:
            left -= os.write(fd, b"x" * min(left, 65536))
    finally:
        os.close(fd)
    return size
report("SMALL", lambda: write("small", 512 * 1024))
report("BIG", lambda: write("big", 2 * 1024 * 1024))
)PY");
    const auto [confined, control] =
        run_both({.command = probe, .config = "[plugin.bubblewrap]\nfile_size_bytes = 1048576\n"});
    EXPECT_EQ(confined.value("SMALL-OK"), "524288") << confined;
    EXPECT_TRUE(confined.has("BIG-DENIED:EFBIG")) << confined;
    EXPECT_EQ(fs::file_size(workspace() / "big"), 2U * 1024 * 1024) << "the control wrote it all";
    EXPECT_EQ(control.value("BIG-OK"), "2097152") << control;

    // Without the signal ignored, the writer is ended by SIGXFSZ.
    const auto killed = run({.command = {"/bin/sh", "-c", "head -c 2097152 /dev/zero > big2"},
                             .config = "[plugin.bubblewrap]\nfile_size_bytes = 1048576\n"});
    EXPECT_EQ(killed.status, 128 + SIGXFSZ) << killed;
}

}  // namespace
}  // namespace tea::test::bwrap
