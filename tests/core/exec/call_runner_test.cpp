// The call runner against real processes.
#include "exec/call_runner.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "exec/lending.hpp"
#include "exec/terminal_text.hpp"
#include "support/terminal.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::exec {
namespace {

namespace fs = std::filesystem;

class CallRunner : public ::testing::Test {
   protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("tea-runner-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    ExecPlan plan(std::vector<std::string> argv,
                  std::vector<std::string> env = {"PATH=/usr/bin:/bin"}) {
        ExecPlan p;
        p.argv = std::move(argv);
        p.env = std::move(env);
        p.cwd = dir_.string();
        p.confinement = "opt-out";
        return p;
    }
    RunOptions capture(std::uint64_t cap = 1 << 20) {
        RunOptions o;
        o.out = {dir_ / "stdout", cap, -1, nullptr};
        o.err = {dir_ / "stderr", cap, -1, nullptr};
        o.kill_grace = std::chrono::milliseconds{300};
        return o;
    }
    std::string read(const fs::path &p) {
        std::ifstream in{p, std::ios::binary};
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    }
    static bool alive(pid_t pid) {
        // A zombie waiting for a reaper other than us counts as ended.
        std::ifstream stat{"/proc/" + std::to_string(pid) + "/stat"};
        std::string line;
        if (!std::getline(stat, line)) {
            return false;
        }
        const auto close = line.rfind(')');
        return close != std::string::npos && line.size() > close + 2 && line[close + 2] != 'Z';
    }
    static bool ends_within(pid_t pid, std::chrono::milliseconds bound) {
        const auto until = std::chrono::steady_clock::now() + bound;
        while (alive(pid)) {
            if (std::chrono::steady_clock::now() >= until) {
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds{10});
        }
        return true;
    }
    fs::path dir_;
};

TEST_F(CallRunner, PassesExitStatusAndOutput) {
    const auto r = run_call(plan({"sh", "-c", "echo out; echo err >&2; exit 7"}), capture());
    ASSERT_TRUE(r.started) << r.start_error;
    EXPECT_EQ(r.exit_code, 7);
    EXPECT_EQ(r.status(), 7);
    EXPECT_EQ(read(dir_ / "stdout"), "out\n");
    EXPECT_EQ(read(dir_ / "stderr"), "err\n");
    EXPECT_GT(r.elapsed.count(), 0);
}

TEST_F(CallRunner, TheCallsMountNamespaceIsEnteredWhateverNumberAPlanFileTakes) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "only root makes a call's mount namespace";
    }
    // A tree lent to uid 4242: in the call's namespace its files are that uid's.
    fs::create_directories(dir_ / "tree");
    std::ofstream{dir_ / "tree" / "file"} << "x";
    Lending::Request request;
    request.trees = {dir_ / "tree"};
    request.uid = 4242;
    request.gid = 4242;
    const Lending lending{request};
    ASSERT_GE(lending.mount_namespace(), 3);
    // A plan file placed at the very number the namespace has in the runtime: the child must
    // enter the namespace before its descriptors are placed.
    auto p = plan({"stat", "-c", "%u", (dir_ / "tree" / "file").string()});
    p.files = {{lending.mount_namespace(), "a plan's file", {}}};
    auto options = capture();
    options.mount_namespace = lending.mount_namespace();
    const auto r = run_call(p, options);
    ASSERT_TRUE(r.started) << r.start_error;
    EXPECT_EQ(r.exit_code, 0) << read(dir_ / "stderr");
    EXPECT_EQ(read(dir_ / "stdout"), "4242\n");
    // The control: outside it, the file is root's.
    fs::remove(dir_ / "stdout");
    fs::remove(dir_ / "stderr");
    const auto outside =
        run_call(plan({"stat", "-c", "%u", (dir_ / "tree" / "file").string()}), capture());
    EXPECT_EQ(read(dir_ / "stdout"), "0\n");
}

TEST_F(CallRunner, ReportsTheSignalThatEndedTheTarget) {
    const auto r = run_call(plan({"sh", "-c", "kill -9 $$"}), capture());
    EXPECT_EQ(r.signal, SIGKILL);
    EXPECT_EQ(r.status(), 128 + SIGKILL);
}

TEST_F(CallRunner, EnvironmentIsExactlyThePlans) {
    // Names that shells and libcs treat specially must arrive untouched, and
    // nothing of the test's own environment may leak in.
    ::setenv("TEA_RUNNER_TEST_LEAK", "leaked", 1);  // NOLINT(concurrency-mt-unsafe): one thread
    const std::vector<std::string> env{
        "BASH_FUNC_f%%=() { echo hi; }", "my.setting=1", "PS1=$ ", "IFS= ", "_=/x", "EMPTY="};
    const auto r = run_call(plan({"/usr/bin/env"}, env), capture());
    ASSERT_EQ(r.exit_code, 0);
    std::string expected;
    for (const auto &e : env) {
        expected += e + "\n";
    }
    EXPECT_EQ(read(dir_ / "stdout"), expected);
    ::unsetenv("TEA_RUNNER_TEST_LEAK");  // NOLINT(concurrency-mt-unsafe): one thread
}

TEST_F(CallRunner, RunsInThePlansDirectory) {
    const auto r = run_call(plan({"pwd"}), capture());
    EXPECT_EQ(read(dir_ / "stdout"), dir_.string() + "\n");
    EXPECT_EQ(r.exit_code, 0);
}

TEST_F(CallRunner, OutputBeyondTheCapIsCountedNotKept) {
    const auto r = run_call(plan({"sh", "-c", "head -c 1000000 /dev/zero"}), capture(1000));
    EXPECT_EQ(r.out.total_bytes, 1000000U);
    EXPECT_EQ(r.out.kept_bytes, 1000U);
    EXPECT_TRUE(r.out.truncated);
    EXPECT_EQ(fs::file_size(dir_ / "stdout"), 1000U);
    EXPECT_FALSE(r.err.truncated);
    // Positive control: under the cap nothing is marked cut.
    fs::remove(dir_ / "stdout");
    fs::remove(dir_ / "stderr");
    const auto small = run_call(plan({"sh", "-c", "head -c 999 /dev/zero"}), capture(1000));
    EXPECT_FALSE(small.out.truncated);
    EXPECT_EQ(fs::file_size(dir_ / "stdout"), 999U);
}

// The copy to the runtime's streams when they are a terminal (terminal_text.hpp): a target's
// control bytes are shown, not acted on, and its last line is ended before the runtime writes.
TEST_F(CallRunner, OutputShownOnATerminalCarriesNoControlAndEndsItsLine) {
    test::Terminal terminal;
    auto options = capture();
    options.out.tee_fd = terminal.device();
    options.err.tee_fd = terminal.device();
    const auto r = run_call(plan({"printf", R"(a\033[8mb\302\233c\033]0;\r)"}), options);
    ASSERT_EQ(r.exit_code, 0) << r.start_error;
    EXPECT_EQ(terminal.output(), "a^[[8mb\\xc2\\x9bc^[]0;\r\n");
    // The file keeps every byte, and the count is the target's.
    EXPECT_EQ(read(dir_ / "stdout"),
              "a\x1b[8mb\xc2\x9b"
              "c\x1b]0;\r");
    EXPECT_EQ(r.out.total_bytes, 14U);
}

// Control: the same output copied to a pipe arrives as it was written, with no line end added.
TEST_F(CallRunner, OutputCopiedToAPipeKeepsEveryByte) {
    std::array<int, 2> ends{};
    ASSERT_EQ(::pipe2(ends.data(), O_CLOEXEC), 0);
    UniqueFd reader{ends[0]};
    UniqueFd writer{ends[1]};
    auto options = capture();
    options.out.tee_fd = writer.get();
    const auto r = run_call(plan({"printf", R"(a\033[8mb\302\233c\033]0;\r)"}), options);
    ASSERT_EQ(r.exit_code, 0) << r.start_error;
    writer.reset();
    std::string copied(64, '\0');
    const auto n = ::read(reader.get(), copied.data(), copied.size());
    ASSERT_GE(n, 0);
    copied.resize(static_cast<std::size_t>(n));
    EXPECT_EQ(copied,
              "a\x1b[8mb\xc2\x9b"
              "c\x1b]0;\r");
}

// A UTF-8 sequence cut between two reads is decided whole: a C1 control is shown escaped, and a
// character is kept (escaped too when the locale is not UTF-8).
TEST_F(CallRunner, ASequenceSplitBetweenReadsIsDecidedWhole) {
    test::Terminal terminal;
    auto options = capture();
    options.out.tee_fd = terminal.device();
    const auto r = run_call(plan({"sh", "-c",
                                  R"(printf '\302'; sleep 0.1; printf '\233x\033'; sleep 0.1;)"
                                  R"( printf '[8m\303'; sleep 0.1; printf '\251\n')"}),
                            options);
    ASSERT_EQ(r.exit_code, 0) << r.start_error;
    const std::string e_acute = terminal_charset() == Charset::utf8 ? "\xc3\xa9" : "\\xc3\\xa9";
    EXPECT_EQ(terminal.output(), "\\xc2\\x9bx^[[8m" + e_acute + "\n");
}

// Both streams on one terminal share its line: it is ended once, whichever stream left it open,
// and a call whose output ended its line gets nothing added.
TEST_F(CallRunner, TheTerminalsLineIsEndedOnceWhicheverStreamLeftItOpen) {
    const auto shown = [&](const std::string &script) {
        fs::remove(dir_ / "stdout");
        fs::remove(dir_ / "stderr");
        test::Terminal terminal;
        auto options = capture();
        options.out.tee_fd = terminal.device();
        options.err.tee_fd = terminal.device();
        const auto r = run_call(plan({"sh", "-c", script}), options);
        EXPECT_EQ(r.exit_code, 0) << r.start_error;
        return terminal.output();
    };
    EXPECT_EQ(shown("printf 'out\\n'; sleep 0.1; printf err >&2"), "out\nerr\n");
    EXPECT_EQ(shown("printf 'err\\n' >&2; sleep 0.1; printf out"), "err\nout\n");
    EXPECT_EQ(shown("printf out; sleep 0.1; printf 'err\\n' >&2"), "outerr\n");
    EXPECT_EQ(shown("echo done"), "done\n");
    EXPECT_EQ(shown("true"), "");
}

TEST_F(CallRunner, NeverWritesThroughAPlantedLink) {
    fs::create_symlink("/tmp/tea-should-not-exist", dir_ / "stdout");
    EXPECT_ANY_THROW(run_call(plan({"true"}), capture()));
    EXPECT_FALSE(fs::exists("/tmp/tea-should-not-exist"));
}

TEST_F(CallRunner, TimeoutEndsTheWholeGroupGrandchildrenIncluded) {
    // The target starts two grandchildren in its group, records their ids and
    // waits: at the timeout every one of them must be gone.
    const auto pids = dir_ / "pids";
    const auto start = std::chrono::steady_clock::now();
    const auto r =
        run_call(plan({"sh", "-c",
                       "sleep 300 & echo $! > pids; (sleep 300 & echo $! >> pids; wait) & "
                       "trap '' TERM; while :; do sleep 0.05; done"}),
                 [&] {
                     auto o = capture();
                     o.timeout = std::chrono::milliseconds{500};
                     return o;
                 }());
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_TRUE(r.timed_out);
    // The leader ignores SIGTERM, so SIGKILL after the grace ended it.
    EXPECT_EQ(r.signal, SIGKILL);
    EXPECT_LT(took, std::chrono::seconds{5});
    std::ifstream in{pids};
    pid_t pid = 0;
    int count = 0;
    while (in >> pid) {
        ++count;
        for (int i = 0; i < 50 && alive(pid); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds{20});
        }
        EXPECT_FALSE(alive(pid)) << "process " << pid << " survived the timeout";
    }
    EXPECT_EQ(count, 2);
}

TEST_F(CallRunner, WhatTheTargetLeftInItsGroupEndsWithIt) {
    const auto r = run_call(plan({"sh", "-c", "sleep 300 & echo $! > pid"}), capture());
    EXPECT_EQ(r.exit_code, 0);
    pid_t pid = 0;
    std::ifstream{dir_ / "pid"} >> pid;
    ASSERT_GT(pid, 0);
    for (int i = 0; i < 50 && alive(pid); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    EXPECT_FALSE(alive(pid));
}

TEST_F(CallRunner, OnlyStandardStreamsAndPlanFilesAreInherited) {
    // A descriptor the runtime holds without O_CLOEXEC must not reach the target. Its number is
    // kept clear of the plan's 5 whatever the test was started with open.
    UniqueFd leak{
        ::fcntl(UniqueFd{::open("/etc/hostname", O_RDONLY | O_CLOEXEC)}.get(), F_DUPFD, 40)};
    ASSERT_TRUE(leak);
    ASSERT_EQ(::fcntl(leak.get(), F_GETFD), 0);
    auto p = plan({"sh", "-c",
                   "cat <&5; echo; if [ -e /proc/self/fd/" + std::to_string(leak.get()) +
                       " ]; then echo leaked; else echo closed; fi"});
    p.files = {{5, "planned bytes", {}}};
    const auto r = run_call(p, capture());
    EXPECT_EQ(r.exit_code, 0);
    // Positive control: the planned descriptor is readable; the leaked one is gone.
    EXPECT_EQ(read(dir_ / "stdout"), "planned bytes\nclosed\n");
}

TEST_F(CallRunner, PlanFilesAreSealed) {
    auto p = plan({"sh", "-c", "echo changed >&5 && echo wrote || echo refused"});
    p.files = {{5, "original", {}}};
    (void)run_call(p, capture());
    EXPECT_EQ(read(dir_ / "stdout"), "refused\n");
}

TEST_F(CallRunner, TheSetupMarkTellsWhetherTheMechanismGotAsFarAsTheTarget) {
    auto marked = [&](const std::string &script) {
        auto p = plan({"sh", "-c", script});
        p.setup_mark_fd = 9;  // one digit: sh redirects no other
        fs::remove(dir_ / "stdout");
        fs::remove(dir_ / "stderr");
        return run_call(p, capture());
    };
    // A launcher that takes the mark and then fails: its failure is the target's side's.
    const auto a = marked("head -c 1 <&9 >/dev/null; exit 3");
    EXPECT_EQ(a.exit_code, 3);
    EXPECT_TRUE(a.setup_marked);
    EXPECT_TRUE(a.setup_reached);
    // One that fails before taking it never got that far.
    const auto b = marked("[ -e /proc/self/fd/9 ] && exit 3; exit 9");
    EXPECT_EQ(b.exit_code, 3) << "the mark is placed at its descriptor";
    EXPECT_TRUE(b.setup_marked);
    EXPECT_FALSE(b.setup_reached);
    // The mark holds one byte and its write end is nowhere: a second read ends at once, empty
    // (124 would be a reader left waiting on a writer that could refill it).
    const auto c = marked(
        "head -c 1 <&9 >/dev/null; timeout 5 cat <&9 | wc -c; timeout 5 cat <&9 >/dev/null; "
        "echo $?");
    EXPECT_EQ(c.exit_code, 0);
    EXPECT_EQ(read(dir_ / "stdout"), "0\n0\n");
    // Without a mark the runner says nothing either way.
    fs::remove(dir_ / "stdout");
    fs::remove(dir_ / "stderr");
    const auto d = run_call(plan({"true"}), capture());
    EXPECT_FALSE(d.setup_marked);
    EXPECT_FALSE(d.setup_reached);
}

// A plan with a holder (ABI 1.4): two processes joined by a socket pair. sh redirects only
// one-digit descriptors, so the holder's end is 8, the mark 9, and the plan's end 7.
ExecPlan with_holder(ExecPlan p, const std::string &holder_script) {
    p.holder = Holder{{"sh", "-c", holder_script}, {"PATH=/usr/bin:/bin"}, p.cwd, {}, 8};
    p.handoff_fd = 7;
    return p;
}

TEST_F(CallRunner, AHolderHandsOverAndEndsWithThePlansProcess) {
    // The holder says where it is, hands over, and would hold on for far longer than the call.
    const auto pid_file = (dir_ / "holder.pid").string();
    auto p = with_holder(plan({"sh", "-c", "read word <&7; echo \"got $word\"; exit 4"}),
                         "echo $$ > " + pid_file +
                             "; echo from-holder >&2; echo handed >&8; "
                             "exec sleep 100");
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_call(p, capture());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds{20});
    EXPECT_TRUE(r.started);
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_EQ(read(dir_ / "stdout"), "got handed\n");
    EXPECT_NE(read(dir_ / "stderr").find("from-holder"), std::string::npos)
        << "the holder writes to the call's streams";
    const pid_t holder = std::stoi(read(pid_file));
    EXPECT_FALSE(alive(holder)) << "the holder outlived the call";
}

TEST_F(CallRunner, AHolderGetsTheMarkAndNoStdinAndThePlansProcessNeither) {
    { std::ofstream{dir_ / "in"} << "meant for the target"; }
    auto o = capture();
    o.in = {StdinSpec::Kind::file, dir_ / "in"};
    auto p = with_holder(
        plan({"sh", "-c",
              "read word <&7; [ -e /proc/self/fd/9 ] && echo plan-has-mark; [ -e /proc/self/fd/8 ] "
              "&& echo plan-has-holder-end; cat; echo \" $word\""}),
        "[ -e /proc/self/fd/7 ] && echo holder-has-plan-end >&2; cat >&2; head -c 1 <&9 "
        ">/dev/null; "
        "echo taken >&8; exec sleep 100");
    p.setup_mark_fd = 9;
    const auto r = run_call(p, o);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(read(dir_ / "stdout"), "meant for the target taken\n");
    EXPECT_EQ(read(dir_ / "stderr"), "")
        << "the holder read the call's stdin or saw the plan's end";
    EXPECT_TRUE(r.setup_marked);
    EXPECT_TRUE(r.setup_reached) << "the mark goes to the holder";
}

TEST_F(CallRunner, AHolderThatEndsBeforeHandingOverLeavesThePlansProcessAnEnd) {
    // The plan's process reads end of file rather than waiting for ever.
    auto p = with_holder(plan({"sh", "-c", "if read word <&7; then exit 1; fi; exit 7"}), "exit 2");
    p.setup_mark_fd = 9;
    const auto r = run_call(p, capture());
    EXPECT_EQ(r.exit_code, 7);
    EXPECT_TRUE(r.setup_marked);
    EXPECT_FALSE(r.setup_reached);
}

TEST_F(CallRunner, TheTimeoutEndsTheHolderToo) {
    const auto pid_file = (dir_ / "holder.pid").string();
    auto p = with_holder(plan({"sh", "-c", "read word <&7; exec sleep 100"}),
                         "echo $$ > " + pid_file + "; echo go >&8; exec sleep 100");
    auto o = capture();
    o.timeout = std::chrono::milliseconds{500};
    const auto r = run_call(p, o);
    EXPECT_TRUE(r.timed_out);
    EXPECT_FALSE(alive(std::stoi(read(pid_file))));
}

TEST_F(CallRunner, AHolderThatCannotBeFoundStartsNothing) {
    auto p = with_holder(plan({"sh", "-c", "exit 0"}), "");
    p.holder->argv = {"tea-no-such-holder-xyz"};
    const auto r = run_call(p, capture());
    EXPECT_FALSE(r.started);
    EXPECT_NE(r.start_error.find("tea-no-such-holder-xyz: command not found"), std::string::npos);
}

TEST_F(CallRunner, StdinFromFileOrNullDevice) {
    { std::ofstream{dir_ / "in"} << "from file"; }
    auto o = capture();
    o.in = {StdinSpec::Kind::file, dir_ / "in"};
    (void)run_call(plan({"cat"}), o);
    EXPECT_EQ(read(dir_ / "stdout"), "from file");
    fs::remove(dir_ / "stdout");
    fs::remove(dir_ / "stderr");
    (void)run_call(plan({"cat"}), capture());
    EXPECT_EQ(read(dir_ / "stdout"), "");
}

TEST_F(CallRunner, CommandNotFoundDoesNotStart) {
    const auto r = run_call(plan({"tea-no-such-command-xyz"}), capture());
    EXPECT_FALSE(r.started);
    EXPECT_EQ(r.start_errno, ENOENT);
    EXPECT_NE(r.start_error.find("command not found"), std::string::npos);
}

TEST_F(CallRunner, TargetRunsInItsOwnProcessGroupWithDefaultSignals) {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &block, nullptr), 0);
    const auto r =
        run_call(plan({"sh", "-c", "ps -o pgid= -p $$ | tr -d ' '; grep SigBlk /proc/self/status"}),
                 capture());
    ::pthread_sigmask(SIG_UNBLOCK, &block, nullptr);
    std::istringstream out{read(dir_ / "stdout")};
    std::string pgid;
    std::string blk;
    std::getline(out, pgid);
    std::getline(out, blk);
    EXPECT_NE(pgid, std::to_string(::getpgrp()));
    EXPECT_EQ(blk, "SigBlk:\t0000000000000000");
    EXPECT_EQ(r.exit_code, 0);
}

TEST_F(CallRunner, ASignalToTheRuntimeEndsTheCall) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &set, nullptr), 0);
    UniqueFd sfd{::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)};
    auto o = capture();
    o.signal_fd = sfd.get();
    std::thread sender{[] {
        std::this_thread::sleep_for(std::chrono::milliseconds{300});
        ::kill(::getpid(), SIGUSR1);
    }};
    const auto start = std::chrono::steady_clock::now();
    const auto r = run_call(plan({"sleep", "300"}), o);
    sender.join();
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    EXPECT_EQ(r.interrupted_by, SIGUSR1);
    EXPECT_EQ(r.signal, SIGTERM);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds{5});
}

TEST_F(CallRunner, AsSubreaperItEndsOrphansThatLeftTheGroup) {
    // A setsid daemon leaves the call's process group; only the subreaper finds it.
    become_subreaper();
    const auto r = run_call(
        plan({"sh", "-c", "setsid sh -c 'echo $$ > pid; exec sleep 300' & sleep 0.2"}), capture());
    EXPECT_EQ(r.exit_code, 0);
    // Counted: under a tracer that wraps the plan, a process that outlived it went unobserved.
    EXPECT_EQ(r.outlived_leader, 1U);
    pid_t pid = 0;
    std::ifstream{dir_ / "pid"} >> pid;
    ASSERT_GT(pid, 0);
    EXPECT_FALSE(alive(pid));

    // A leader that waits for what it started leaves nothing to count.
    fs::remove(dir_ / "stdout");
    fs::remove(dir_ / "stderr");
    const auto waited = run_call(plan({"sh", "-c", "setsid sleep 0.1 & wait"}), capture());
    EXPECT_EQ(waited.exit_code, 0);
    EXPECT_EQ(waited.outlived_leader, 0U);
}

}  // namespace
}  // namespace tea::exec

namespace tea::exec {
namespace {

TEST_F(CallRunner, PlanFileFromPathIsReadOnly) {
    { std::ofstream{dir_ / "data"} << "from a path"; }
    auto p =
        plan({"sh", "-c", "cat <&7; echo; (echo x >&7) 2>/dev/null && echo wrote || echo refused"});
    p.files = {{7, {}, (dir_ / "data").string()}};
    const auto r = run_call(p, capture());
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(read(dir_ / "stdout"), "from a path\nrefused\n");
}

// CAP_NET_RAW in the test's inheritable set for its lifetime.
class InheritableNetRaw {
   public:
    InheritableNetRaw() {
        ::syscall(SYS_capget, &header_, saved_.data());
        auto raised = saved_;
        raised[0].inheritable |= 1U << CAP_NET_RAW;
        EXPECT_EQ(::syscall(SYS_capset, &header_, raised.data()), 0);
    }
    InheritableNetRaw(const InheritableNetRaw &) = delete;
    InheritableNetRaw &operator=(const InheritableNetRaw &) = delete;
    ~InheritableNetRaw() { ::syscall(SYS_capset, &header_, saved_.data()); }

   private:
    __user_cap_header_struct header_{_LINUX_CAPABILITY_VERSION_3, 0};
    std::array<__user_cap_data_struct, 2> saved_{};
};

TEST_F(CallRunner, RunAsDropsToTheIdentityWithNoCapabilityLeft) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "only a runtime running as root can run a plan as another identity";
    }
    fs::permissions(dir_, fs::perms{0755});
    // A runtime started with an inheritable capability (capsh --inh, an older
    // container runtime) must not pass it on.
    const InheritableNetRaw inheritable;
    const std::string probe =
        "grep -E '^(Uid|Gid|Groups|Cap[A-Za-z]+|NoNewPrivs):' /proc/self/status";
    auto as_nobody = plan({"sh", "-c", probe});
    as_nobody.run_as = {true, 64991, 64992};
    const auto r = run_call(as_nobody, capture());
    ASSERT_TRUE(r.started) << r.start_error;
    EXPECT_EQ(r.exit_code, 0) << read(dir_ / "stderr");
    const auto out = read(dir_ / "stdout");
    EXPECT_NE(out.find("Uid:\t64991\t64991\t64991\t64991"), std::string::npos) << out;
    EXPECT_NE(out.find("Gid:\t64992\t64992\t64992\t64992"), std::string::npos) << out;
    EXPECT_NE(out.find("Groups:\t \n"), std::string::npos) << out;
    for (const char *set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
        EXPECT_NE(out.find(std::string{set} + ":\t0000000000000000"), std::string::npos)
            << set << "\n"
            << out;
    }
    EXPECT_NE(out.find("NoNewPrivs:\t1"), std::string::npos) << out;

    // The control: the same probe without runAs runs as root with capabilities.
    fs::remove(dir_ / "stdout");
    fs::remove(dir_ / "stderr");
    const auto control = run_call(plan({"sh", "-c", probe}), capture());
    const auto control_out = read(dir_ / "stdout");
    EXPECT_NE(control_out.find("Uid:\t0\t0\t0\t0"), std::string::npos) << control_out;
    EXPECT_EQ(control_out.find("CapEff:\t0000000000000000"), std::string::npos) << control_out;
    EXPECT_EQ(control_out.find("CapInh:\t0000000000000000"), std::string::npos) << control_out;
}

TEST_F(CallRunner, RunAsKeepsTheSpawnContract) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "only a runtime running as root can run a plan as another identity";
    }
    fs::permissions(dir_, fs::perms{0755});
    // Its own process group, a clean signal mask, the plan's files, the plan's
    // environment and working directory, exactly as through posix_spawn.
    auto p = plan({"sh", "-c",
                   "ps -o pid=,pgid= -p $$; grep -E '^Sig(Blk|Ign):' /proc/self/status; "
                   "cat <&7; echo; echo \"$ONLY\"; pwd"},
                  {"PATH=/usr/bin:/bin", "ONLY=this"});
    p.files = {{7, "plan file", {}}};
    p.run_as = {true, 64991, 64992};
    const auto r = run_call(p, capture());
    ASSERT_TRUE(r.started) << r.start_error;
    EXPECT_EQ(r.exit_code, 0) << read(dir_ / "stderr");
    const auto out = read(dir_ / "stdout");
    std::istringstream first{out};
    pid_t pid = 0;
    pid_t pgid = 0;
    first >> pid >> pgid;
    EXPECT_EQ(pid, pgid) << out;
    EXPECT_NE(out.find("SigBlk:\t0000000000000000"), std::string::npos) << out;
    EXPECT_NE(out.find("SigIgn:\t0000000000000000"), std::string::npos) << out;
    EXPECT_NE(out.find("plan file\nthis\n" + dir_.string()), std::string::npos) << out;
}

TEST_F(CallRunner, RunAsAProgramThatCannotBeExecutedIsNotStarted) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "only a runtime running as root can run a plan as another identity";
    }
    auto p = plan({"/nonexistent/program"});
    p.run_as = {true, 64991, 64992};
    const auto r = run_call(p, capture());
    EXPECT_FALSE(r.started);
    EXPECT_EQ(r.start_errno, ENOENT) << r.start_error;
}

// A staged call (ABI 1.5): started from a plan whose file 8 is deferred (sh redirects one-digit
// descriptors only), finished with the complete plan.
ExecPlan staged_plan(ExecPlan p) {
    p.files = {{8, {}, {}, true}, {5, "fixed", {}}};
    return p;
}
ExecPlan completed(ExecPlan p, std::string content) {
    p.files = {{8, std::move(content), {}}, {5, "fixed", {}}};
    return p;
}
bool appears(const fs::path &file) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (!fs::exists(file)) {
        if (std::chrono::steady_clock::now() > give_up) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{2});
    }
    return true;
}

TEST_F(CallRunner, AStagedCallRunsBeforeItsPlanIsCompleteAndReadsTheDeferredFileWhole) {
    const auto started = dir_ / "started";
    // More than a socket buffer takes at once, so the runner must keep writing while it waits.
    const std::string content(std::size_t{3} << 20U, 'x');
    const auto p =
        plan({"sh", "-c", "echo up > " + started.string() + "; cat <&5; echo; wc -c <&8"});
    StartedCall call{staged_plan(p), capture()};
    ASSERT_GT(call.pid(), 0);
    EXPECT_TRUE(appears(started)) << "the process runs before the plan is complete";
    const auto r = call.finish(completed(p, content));
    ASSERT_TRUE(r.started) << r.start_error;
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(read(dir_ / "stdout"), "fixed\n" + std::to_string(content.size()) + "\n");
}

TEST_F(CallRunner, AStagedCallNeverFinishedEndsWithoutActingOnItsFile) {
    const auto started = dir_ / "started";
    const auto acted = dir_ / "acted";
    const auto p = plan(
        {"sh", "-c",
         "echo up > " + started.string() + "; cat <&8 >/dev/null; echo x > " + acted.string()});
    pid_t pid = -1;
    {
        StartedCall call{staged_plan(p), capture()};
        pid = call.pid();
        ASSERT_TRUE(appears(started));
        EXPECT_TRUE(alive(pid));
    }
    // Killed and reaped while it waited for its file, so it never went on.
    EXPECT_FALSE(alive(pid));
    EXPECT_EQ(::kill(pid, 0), -1);
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
    EXPECT_FALSE(fs::exists(acted));
    // Control: the same plan finished goes on.
    fs::remove(started);
    fs::remove(dir_ / "stdout");
    fs::remove(dir_ / "stderr");
    StartedCall call{staged_plan(p), capture()};
    const auto r = call.finish(completed(p, "content"));
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_TRUE(fs::exists(acted));
}

TEST_F(CallRunner, AStagedCallRefusesACompletePlanForAnotherProcess) {
    const auto acted = dir_ / "acted";
    const auto p = plan({"sh", "-c", "cat <&8 >/dev/null; echo x > " + acted.string()});
    const auto refuse = [&](const ExecPlan &complete, const std::string &field) {
        StartedCall call{staged_plan(p), capture()};
        const pid_t pid = call.pid();
        try {
            (void)call.finish(complete);
            ADD_FAILURE() << field << ": finished";
        } catch (const Error &e) {
            EXPECT_NE(std::string{e.what()}.find("(" + field + " differs)"), std::string::npos)
                << e.what();
        }
        EXPECT_FALSE(alive(pid)) << field;
        fs::remove(dir_ / "stdout");
        fs::remove(dir_ / "stderr");
    };
    auto other_argv = completed(p, "c");
    other_argv.argv.back() += " ";
    refuse(other_argv, "argv");
    auto other_env = completed(p, "c");
    other_env.env.emplace_back("EXTRA=1");
    refuse(other_env, "env");
    auto other_fixed = completed(p, "c");
    other_fixed.files[1].content = "changed";
    refuse(other_fixed, "files");
    auto still_deferred = staged_plan(p);
    refuse(still_deferred, "files");
    auto by_path = completed(p, "");
    by_path.files[0].path = "/etc/hostname";
    refuse(by_path, "files");
    auto other_mark = completed(p, "c");
    other_mark.setup_mark_fd = 9;
    refuse(other_mark, "setupMark");
    auto other_cwd = completed(p, "c");
    other_cwd.cwd = "/";
    refuse(other_cwd, "cwd");
    // Another identity, other limits, another loan: the process started is not the one described.
    auto other_identity = completed(p, "c");
    other_identity.run_as = RunAs{true, 65534, 65534};
    refuse(other_identity, "runAs");
    auto other_limits = completed(p, "c");
    other_limits.child.limits.cpu_seconds = 10;
    refuse(other_limits, "limits, newSessionKeyring or newSession");
    auto other_loan = completed(p, "c");
    other_loan.lend = Lend{true, 65534, 65534, {dir_.string()}};
    refuse(other_loan, "lend");
    auto other_confinement = completed(p, "c");
    other_confinement.confinement = "another";
    refuse(other_confinement, "confinement");
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
    EXPECT_FALSE(fs::exists(acted));
}

TEST_F(CallRunner, AStagedCallsTimeoutCountsFromItsCompletePlan) {
    // The backend takes longer to complete the plan than the call may run; the target itself runs
    // well within its time once it has its file.
    const auto p = plan({"sh", "-c", "cat <&8 >/dev/null; sleep 0.2; echo ran"});
    auto options = capture();
    options.timeout = std::chrono::milliseconds{700};
    {
        StartedCall call{staged_plan(p), options};
        std::this_thread::sleep_for(std::chrono::milliseconds{800});
        const auto r = call.finish(completed(p, "c"));
        EXPECT_FALSE(r.timed_out);
        EXPECT_EQ(r.exit_code, 0);
        EXPECT_EQ(read(dir_ / "stdout"), "ran\n");
        EXPECT_LT(r.elapsed, std::chrono::milliseconds{700}) << "the plan's wait is not the call's";
    }
    // The timeout still holds from there.
    fs::remove(dir_ / "stdout");
    fs::remove(dir_ / "stderr");
    const auto slow = plan({"sh", "-c", "cat <&8 >/dev/null; sleep 30"});
    options.timeout = std::chrono::milliseconds{300};
    StartedCall call{staged_plan(slow), options};
    const auto r = call.finish(completed(slow, "c"));
    EXPECT_TRUE(r.timed_out);
    EXPECT_LT(r.elapsed, std::chrono::seconds{10});
}

TEST_F(CallRunner, AStagedProcessThatEndsBeforeReadingLeavesTheCallItsEnd) {
    // The runtime does not ignore SIGPIPE here: a write to a reader that is gone must not kill it.
    const auto p = plan({"sh", "-c", "exit 6"});
    StartedCall call{staged_plan(p), capture()};
    const auto r = call.finish(completed(p, std::string(std::size_t{4} << 20U, 'y')));
    EXPECT_EQ(r.exit_code, 6);
}

TEST_F(CallRunner, ADeferredFileIsRefusedOutsideAStagedCall) {
    EXPECT_THROW((void)run_call(staged_plan(plan({"true"})), capture()), Error);
    auto with = with_holder(staged_plan(plan({"true"})), "true");
    EXPECT_THROW((StartedCall{with, capture()}), Error);
}

TEST_F(CallRunner, AStagedCallWhoseProgramIsMissingSaysSoAtItsEnd) {
    const auto p = plan({"tea-no-such-program-here"});
    StartedCall call{staged_plan(p), capture()};
    EXPECT_EQ(call.pid(), -1);
    const auto r = call.finish(completed(p, "c"));
    EXPECT_FALSE(r.started);
    EXPECT_EQ(r.start_errno, ENOENT);
}

// Starts `p` from a forked runtime, waits until the plan wrote its pid (and `more`, each a file
// holding a pid), kills that runtime outright (SIGKILL: it ends nothing itself) and answers the
// pids.
std::vector<pid_t> started_by_a_killed_runtime(const ExecPlan &p, const RunOptions &options,
                                               const std::vector<fs::path> &pid_files) {
    const pid_t runtime = ::fork();
    if (runtime == 0) {
        try {
            (void)run_call(p, options);
        } catch (...) {
        }
        ::_exit(0);
    }
    std::vector<pid_t> pids;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    for (const auto &file : pid_files) {
        pid_t pid = 0;
        while (pid == 0 && std::chrono::steady_clock::now() < until) {
            std::ifstream{file} >> pid;
            std::this_thread::sleep_for(std::chrono::milliseconds{10});
        }
        pids.push_back(pid);
    }
    ::kill(runtime, SIGKILL);
    ::waitpid(runtime, nullptr, 0);
    return pids;
}

// Runs `p` from a forked runtime whose controlling terminal is the pseudo-terminal at `tty` (it
// leads a session of its own and opens the terminal, as a login shell's child has it). Answers
// the call's exit code, or 100 and up when the runtime could not be given the terminal.
int run_with_a_controlling_terminal(const ExecPlan &p, const RunOptions &options,
                                    const std::string &tty) {
    const pid_t runtime = ::fork();
    if (runtime == 0) {
        if (::setsid() < 0) {
            ::_exit(101);
        }
        // Without O_NOCTTY: a session leader with no terminal takes the one it opens.
        const int terminal = ::open(tty.c_str(), O_RDWR | O_CLOEXEC);
        const int own = ::open("/dev/tty", O_RDWR | O_CLOEXEC);
        if (terminal < 0 || own < 0) {
            ::_exit(102);
        }
        ::close(own);
        try {
            const auto r = run_call(p, options);
            ::_exit(r.started && r.signal == 0 ? r.exit_code : 103);
        } catch (...) {
            ::_exit(104);
        }
    }
    int status = 0;
    ::waitpid(runtime, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 105;
}

// A plan's newSession: its process leads a session of its own and has no controlling terminal,
// though the runtime has one, so it can neither open /dev/tty (ENXIO) nor push input into the
// terminal with TIOCSTI through a descriptor of it (EPERM: not its controlling terminal). The
// control: the same plan without newSession shares the runtime's session and reaches the terminal
// both ways. Under a root runtime the target runs as another identity (runAs), without the
// CAP_SYS_ADMIN that lets TIOCSTI reach any terminal.
TEST_F(CallRunner, ANewSessionLeavesTheRuntimesTerminalBehind) {
    std::string legacy = "1";
    std::ifstream{"/proc/sys/dev/tty/legacy_tiocsti"} >> legacy;
    const auto probe = [&](bool new_session) {
        test::Terminal terminal;
        fs::remove(dir_ / "stdout");  // the runner makes its output files afresh
        fs::remove(dir_ / "stderr");
        auto p = plan({"/usr/bin/python3", "-c",
                       "import errno, fcntl, os, termios\n"
                       "def report(name, f):\n"
                       "    try:\n"
                       "        f()\n"
                       "        print(name + '-OK')\n"
                       "    except OSError as e:\n"
                       "        print(name + '-DENIED:' + errno.errorcode[e.errno])\n"
                       "print('LEADER' if os.getsid(0) == os.getpid() else 'MEMBER')\n"
                       "report('TTY', lambda: os.close(os.open('/dev/tty', os.O_RDWR)))\n"
                       "report('TIOCSTI', lambda: fcntl.ioctl(5, termios.TIOCSTI, b'#'))\n"});
        p.child.new_session = new_session;
        // The terminal at descriptor 5, as a target handed it on its stdin would hold it.
        p.files = {{5, "", terminal.path()}};
        if (::geteuid() == 0) {
            p.run_as = {true, 64991, 64992};
        }
        const int status = run_with_a_controlling_terminal(p, capture(), terminal.path());
        (void)terminal.output();
        EXPECT_EQ(status, 0) << read(dir_ / "stderr");
        return read(dir_ / "stdout");
    };
    const auto alone = probe(true);
    EXPECT_NE(alone.find("LEADER\n"), std::string::npos) << alone;
    EXPECT_NE(alone.find("TTY-DENIED:ENXIO\n"), std::string::npos) << alone;
    EXPECT_NE(alone.find("TIOCSTI-DENIED:EPERM\n"), std::string::npos) << alone;

    const auto shared = probe(false);
    EXPECT_NE(shared.find("MEMBER\n"), std::string::npos) << shared;
    EXPECT_NE(shared.find("TTY-OK\n"), std::string::npos) << shared;
    if (legacy == "1") {  // a kernel that refuses TIOCSTI to every unprivileged process shows none
        EXPECT_NE(shared.find("TIOCSTI-OK\n"), std::string::npos) << shared;
    }
}

TEST_F(CallRunner, APlanThatConfinesNothingDiesWithARuntimeKilledOutright) {
    // The plan's process and its holder ignore every signal they can, and neither is waited for
    // by anyone once the runtime is gone: only the parent-death signal the runner armed ends them.
    const auto script = [&](const char *name) {
        return "trap '' HUP INT TERM; echo $$ > " + (dir_ / name).string() + "; exec sleep 300";
    };
    auto p = with_holder(plan({"sh", "-c", script("plan.pid")}), script("holder.pid"));
    const auto pids =
        started_by_a_killed_runtime(p, capture(), {dir_ / "plan.pid", dir_ / "holder.pid"});
    for (const pid_t pid : pids) {
        ASSERT_GT(pid, 0) << "the call never started";
        EXPECT_TRUE(ends_within(pid, std::chrono::seconds{5})) << pid << " outlived the runtime";
        ::kill(pid, SIGKILL);
    }

    // The control: the same process with its parent-death signal taken off outlives the runtime.
    fs::remove(dir_ / "stdout");
    fs::remove(dir_ / "stderr");
    const auto survivor = started_by_a_killed_runtime(
        plan({"/usr/bin/python3", "-c",
              "import ctypes, os, time\n"
              "ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)\n"  // PR_SET_PDEATHSIG: none
              "open('survivor.pid', 'w').write(str(os.getpid()))\n"
              "time.sleep(300)\n"}),
        capture(), {dir_ / "survivor.pid"});
    ASSERT_GT(survivor.at(0), 0);
    EXPECT_FALSE(ends_within(survivor[0], std::chrono::milliseconds{500}));
    ::kill(survivor[0], SIGKILL);
}

TEST_F(CallRunner, AConfinementSeesTheRuntimesDeathOnTheCallsOutputAndIsLeftToEndItself) {
    // A confining plan's process gets no parent-death signal (a launcher killed half-way through
    // its set-up can leave worse than itself behind); what it is promised instead: the call's
    // stdout and stderr are pipes only the runtime reads, whose write ends report POLLERR once the
    // runtime is dead.
    auto p = plan({"/usr/bin/python3", "-c",
                   "import os, select\n"
                   "open('plan.pid', 'w').write(str(os.getpid()))\n"
                   "watch = select.poll()\n"
                   "watch.register(1, 0)\n"
                   "watch.register(2, 0)\n"
                   "while not any(e & select.POLLERR for _, e in watch.poll()):\n"
                   "    pass\n"
                   "open('saw-the-runtime-die', 'w').close()\n"});
    p.confinement = "some-confinement";
    const auto pids = started_by_a_killed_runtime(p, capture(), {dir_ / "plan.pid"});
    ASSERT_GT(pids.at(0), 0) << "the call never started";
    EXPECT_TRUE(ends_within(pids[0], std::chrono::seconds{5}));
    EXPECT_TRUE(fs::exists(dir_ / "saw-the-runtime-die"));
    ::kill(pids[0], SIGKILL);

    // The control: a confining plan's process that does not watch outlives the runtime.
    fs::remove(dir_ / "stdout");
    fs::remove(dir_ / "stderr");
    auto idle = plan({"sh", "-c", "echo $$ > idle.pid; exec sleep 300"});
    idle.confinement = "some-confinement";
    const auto left = started_by_a_killed_runtime(idle, capture(), {dir_ / "idle.pid"});
    ASSERT_GT(left.at(0), 0);
    EXPECT_FALSE(ends_within(left[0], std::chrono::milliseconds{500}));
    ::kill(left[0], SIGKILL);
}

TEST_F(CallRunner, ARunAsProcessDiesWithARuntimeKilledOutright) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "only a runtime running as root can run a plan as another identity";
    }
    // The identity change clears a parent-death signal armed before it.
    fs::permissions(dir_, fs::perms{0777});
    auto p = plan({"sh", "-c", "echo $$ > plan.pid; exec sleep 300"});
    p.run_as = {true, 64991, 64992};
    const auto pids = started_by_a_killed_runtime(p, capture(), {dir_ / "plan.pid"});
    ASSERT_GT(pids.at(0), 0) << "the call never started";
    EXPECT_TRUE(ends_within(pids[0], std::chrono::seconds{5}));
    ::kill(pids[0], SIGKILL);
}

TEST_F(CallRunner, ACallIsWaitedForByTheThreadThatStartedIt) {
    // Its processes die with the thread that started them: another thread may not take it over.
    const auto p = plan({"sleep", "30"});
    std::optional<StartedCall> call;
    call.emplace(staged_plan(p), capture());
    bool refused = false;
    std::thread other{[&] {
        try {
            (void)call->finish(completed(p, "c"));
        } catch (const Error &) {
            refused = true;
        }
    }};
    other.join();
    EXPECT_TRUE(refused);
}

// FDSize in /proc/self/status: how many descriptors the process's table holds now.
int descriptor_table_size() {
    std::ifstream status{"/proc/self/status"};
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("FDSize:", 0) == 0) {
            return std::stoi(line.substr(7));
        }
    }
    return -1;
}

// Runs `body` in a forked child, which starts with a table of the size its open descriptors
// need; the child's exit status is the body's.
int in_child(int (*body)()) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::_exit(body());
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

// The soft descriptor limit set to `n`, the hard one kept (an unprivileged test may not raise it
// back); false when the hard limit is below `n`.
bool set_soft_limit(rlim_t n) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_max < n) {
        return false;
    }
    limit.rlim_cur = n;
    return ::setrlimit(RLIMIT_NOFILE, &limit) == 0;
}

// A descriptor at 256, as the runner's first one is (0-2 may be closed under the test driver).
UniqueFd at_runner_floor() {
    const UniqueFd root{::open("/", O_PATH | O_CLOEXEC)};
    return UniqueFd{::fcntl(root.get(), F_DUPFD_CLOEXEC, 256)};
}

// A call's first runner descriptor (a call of any plan with a setup mark or a staged file takes
// one at 256) must find the table already large enough: grown later, with another thread in the
// process (an egress proxy's), the kernel waits for an RCU grace period first.
TEST(DescriptorTable, ReservedOnceTheRunnersFirstDescriptorNeedsNoGrowth) {
    // The control: without the reservation, a descriptor at 256 grows the table.
    EXPECT_EQ(in_child([] {
                  const int before = descriptor_table_size();
                  if (before <= 0 || before > 256) return 1;  // no room to grow: shows nothing
                  const auto fd = at_runner_floor();
                  return fd && descriptor_table_size() > before ? 0 : 2;
              }),
              0);
    EXPECT_EQ(in_child([] {
                  if (!set_soft_limit(1024)) return 4;  // room for all 1024
                  const int reached = reserve_descriptor_table();
                  const int after = descriptor_table_size();
                  if (reached != 1023 || after < 1024) return 1;
                  if (::fcntl(reached, F_GETFD) != -1) return 2;  // closed again
                  const auto fd = at_runner_floor();
                  return fd && descriptor_table_size() == after ? 0 : 3;
              }),
              0);
}

TEST(DescriptorTable, StaysWithinTheDescriptorLimitAndGivesUpBelowTheRunnersNumbers) {
    EXPECT_EQ(in_child([] {
                  if (!set_soft_limit(600)) return 1;
                  return reserve_descriptor_table() == 599 && descriptor_table_size() >= 600 ? 0
                                                                                             : 2;
              }),
              0);
    EXPECT_EQ(in_child([] {
                  if (!set_soft_limit(200)) return 1;
                  return reserve_descriptor_table() == -1 ? 0 : 2;
              }),
              0);
}

}  // namespace
}  // namespace tea::exec
