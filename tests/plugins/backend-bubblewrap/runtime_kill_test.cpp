// A runtime killed outright (SIGKILL) at a random moment of a call leaves none of the call's
// processes running, however its target tries to outlive it, in every way a call runs: audited
// (strace and the holder), unaudited (the view builder, started before its view exists), with a
// route out (the shim and its relay, audited or not), through the helper, and an evaluator in the
// grader's view; and the next run over the same private root reclaims every directory the killed
// one left. As root, with an identity of its own per call ([confinement] uid_range), the killed
// runtime's hold on that identity goes with it and no process of the identity remains: the next
// call, given a range of that one id, takes it again.
//
// The test process is a child subreaper while it kills, so whatever descended from the runtime
// and outlives it is reparented to the test and found as its descendant (the holder's bwrap, whose
// command line names nothing of the call, included); a process that carries the call's marker (in
// its command line or environment) is found wherever it went. Each is named with its uid (as root,
// the sandbox identity's). Not every process of that identity: other tests and other users' calls
// run as it too.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "support/process.hpp"
#include "support/sanitized.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Every way the target has to outlive its call: signals ignored, a setsid daemon, a double fork,
// and a process that makes itself a child subreaper, leaves the session and forks a grandchild
// that is reparented to it. The python writes the ready file once all of it stands.
constexpr const char *survivor_script = R"SH(trap '' HUP INT TERM PIPE
setsid sleep "$1" </dev/null >/dev/null 2>&1 &
( (sleep "$1" &) & )
/usr/bin/python3 -I -c "$2" "$1" "$3" &
exec sleep "$1"
)SH";

constexpr const char *survivor_python = R"PY(import ctypes, os, signal, sys, time
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):
    signal.signal(s, signal.SIG_IGN)
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
os.setsid()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(1000)
    os._exit(0)
open(sys.argv[2], "w").close()
time.sleep(1000)
)PY";

// The one id a configuration with an identity per call gives its calls, outside the ranges the
// other tests use (call_identity_test.cpp).
constexpr unsigned own_identity = 2147418112U + 64U;

struct Configuration {
    const char *name;
    std::vector<std::string> options;
    enum class Kind { target, missing_program, grader } kind;
    int kills;
    bool own_identity = false;  // [confinement] uid_range of own_identity alone (as root)
};
using Kind = Configuration::Kind;

// 100 kills, spread over the ways a call runs: a target's exec in each of its configurations, a
// program the host lacks (which the helper fails to start), and an evaluator in the grader's view
// (run by tea-plan-call as `run` runs it); as root, 20 more of calls with an identity of their own.
// The sanitized build kills a quarter as often (support/sanitized.hpp).
const std::vector<Configuration> &configurations() {
    static const std::vector<Configuration> all{
        {"audited", {}, Kind::target, 20},
        {"unaudited (staged view builder)", {"--observer", "none"}, Kind::target, 20},
        {"egress, audited", {"--egress", "127.0.0.1:9"}, Kind::target, 20},
        {"egress, unaudited", {"--egress", "127.0.0.1:9", "--observer", "none"}, Kind::target, 20},
        {"helper (no such program)", {"--observer", "none"}, Kind::missing_program, 10},
        {"grader", {}, Kind::grader, 10},
        {"identity per call, audited", {}, Kind::target, 10, true},
        {"identity per call, unaudited", {"--observer", "none"}, Kind::target, 10, true},
    };
    return all;
}

struct ProcessEntry {
    pid_t parent = 0;
    char state = '?';
};

// Every process of the host, by pid: its parent and state, from /proc/PID/stat.
std::map<pid_t, ProcessEntry> process_table() {
    std::map<pid_t, ProcessEntry> table;
    std::error_code ec;
    for (fs::directory_iterator it{"/proc", ec}, end; !ec && it != end; it.increment(ec)) {
        const auto name = it->path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        const auto text = tea::test::read_file((it->path() / "stat").string());
        const auto close = text.rfind(')');
        if (close == std::string::npos || close + 2 >= text.size()) {
            continue;  // ended meanwhile
        }
        ProcessEntry e;
        std::istringstream fields{text.substr(close + 2)};
        fields >> e.state >> e.parent;
        table[static_cast<pid_t>(std::stol(name))] = e;
    }
    return table;
}

bool carries(pid_t pid, const std::string &marker) {
    const auto dir = "/proc/" + std::to_string(pid);
    for (const char *file : {"/cmdline", "/environ"}) {
        if (tea::test::read_file(dir + file).find(marker) != std::string::npos) {
            return true;
        }
    }
    return false;
}

std::string describe(pid_t pid) {
    auto cmdline = tea::test::read_file("/proc/" + std::to_string(pid) + "/cmdline");
    for (auto &c : cmdline) {
        c = c == '\0' || c == '\n' ? ' ' : c;
    }
    return "pid " + std::to_string(pid) + " uid " + std::to_string(process_uid(pid)) + ": " +
           cmdline.substr(0, 160);
}

// The live processes (not zombies) whose real uid is `uid`.
std::vector<pid_t> processes_of(uid_t uid) {
    std::vector<pid_t> found;
    for (const auto &[pid, entry] : process_table()) {
        if (entry.state != 'Z' && entry.state != 'X' && process_uid(pid) == uid) {
            found.push_back(pid);
        }
    }
    return found;
}

// Reaps the zombies reparented to the test, which is their subreaper.
void reap_orphans() {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
}

// The live processes (zombies have ended) that descend from the test or carry the marker.
std::vector<pid_t> survivors(const std::string &marker) {
    const auto table = process_table();
    const pid_t self = ::getpid();
    std::vector<pid_t> found;
    for (const auto &[pid, entry] : table) {
        if (pid == self || entry.state == 'Z' || entry.state == 'X') {
            continue;
        }
        bool descends = false;
        for (pid_t up = entry.parent; up > 1; up = table.count(up) ? table.at(up).parent : 0) {
            if (up == self) {
                descends = true;
                break;
            }
        }
        if (descends || carries(pid, marker)) {
            found.push_back(pid);
        }
    }
    return found;
}

// Every entry beneath `root`, by its path relative to it.
std::set<std::string> tree(const fs::path &root) {
    std::set<std::string> names;
    std::error_code ec;
    for (fs::recursive_directory_iterator it{root, ec}, end; !ec && it != end; it.increment(ec)) {
        names.insert(fs::relative(it->path(), root, ec).string());
    }
    return names;
}

class ProcessesOfAKilledRuntime : public EitherIdentity {
   protected:
    void SetUp() override {
        EitherIdentity::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        // A private root and a temp directory of this test's own, for either identity: what the
        // next run must leave is exactly what a run that was not killed leaves.
        own_ = base() / "kill";
        fs::create_directories(own_ / "tmp");
        fs::permissions(own_, fs::perms{0755});
        hand_to_caller(own_);
        root_ = own_ / "private";
        tmp_ = own_ / "tmp";
        ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    }

    void TearDown() override {
        ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
        reap_orphans();
        EitherIdentity::TearDown();
    }

    [[nodiscard]] std::vector<std::string> env() const {
        return {"TEA_EVALUATE_PRIVATE_ROOT=" + root_.string(), "TMPDIR=" + tmp_.string()};
    }

    [[nodiscard]] std::string config_of(const Configuration &c) const {
        return c.own_identity
                   ? std::string{config} + "[confinement]\nuid_range = [" +
                         std::to_string(own_identity) + ", " + std::to_string(own_identity) + "]\n"
                   : std::string{config};
    }

    [[nodiscard]] bool runs(const Configuration &c) const {
        return !c.own_identity || (::geteuid() == 0 && !unprivileged_user());
    }

    // The call of `c` whose target runs `command` (for a missing program: none of it).
    Process start_call(const Configuration &c, const std::string &marker,
                       std::vector<std::string> command) {
        if (c.kind == Kind::grader) {
            auto spec = grader_spec(std::move(command), {withheld().string()});
            spec.env.push_back("TEA_KILL_MARK=" + marker);
            return start_spec(spec);
        }
        Call call{.command = std::move(command),
                  .config = config_of(c),
                  .env = env(),
                  .options = c.options};
        if (c.kind == Kind::missing_program) {
            call.command = {"tea-no-such-program-" + marker};
        }
        call.options.insert(call.options.end(), {"--env", "TEA_KILL_MARK=" + marker});
        return start(call);
    }

    static std::vector<std::string> survivor(const std::string &marker, const fs::path &ready) {
        return {"/bin/sh", "-c", survivor_script, "sh", marker, survivor_python, ready.string()};
    }

    // Waits for every survivor of `marker` to end; kills and names those still running after
    // `bound`.
    static std::vector<std::string> left_running(const std::string &marker,
                                                 std::chrono::milliseconds bound) {
        std::vector<pid_t> left;
        const bool none = eventually(
            [&] {
                reap_orphans();
                left = survivors(marker);
                return left.empty();
            },
            bound);
        std::vector<std::string> named;
        if (!none) {
            for (const pid_t pid : left) {
                named.push_back(describe(pid));
            }
            for (const pid_t pid : left) {
                ::kill(pid, SIGKILL);
            }
            eventually([&] {
                reap_orphans();
                return survivors(marker).empty();
            });
        }
        return named;
    }

    // The subject is the runtime's death, not the host-socket walk: a /tmp that another user
    // fills meanwhile (a build, another test's tree) must not refuse these calls.
    static constexpr const char *config = "[plugin.bubblewrap]\nsocket_dirs = [\"/run\"]\n";

    fs::path own_;
    fs::path root_;
    fs::path tmp_;
};

TEST_P(ProcessesOfAKilledRuntime, NoneOutlivesItAndTheNextRunReclaimsEveryDirectory) {
    // The positive control: the same workload started by the test itself, its shell killed,
    // leaves its detached processes running, and the scan finds them.
    {
        const auto marker = sleep_marker();
        const auto ready = base() / ("ready-" + random_token());
        Process direct{
            {"/bin/sh", "-c", survivor_script, "sh", marker, survivor_python, ready.string()},
            base_env(),
            {},
            base()};
        ASSERT_TRUE(eventually([&] { return fs::exists(ready); })) << "the workload never stood";
        ::kill(direct.pid(), SIGKILL);
        direct.wait();
        const auto left = left_running(marker, 300ms);
        EXPECT_GE(left.size(), 4U) << "the workload's detached processes were not found";
    }

    // What a run that is not killed leaves in the private root, in each configuration.
    for (const auto &c : configurations()) {
        if (!runs(c)) {
            continue;
        }
        const auto r = start_call(c, sleep_marker(), {"/bin/true"}).wait();
        ASSERT_EQ(r.status, c.kind == Kind::missing_program ? 127 : 0) << c.name << "\n" << r;
    }
    const auto kept = tree(root_);

    std::mt19937 random{std::random_device{}()};
    std::vector<std::string> failures;
    std::vector<std::string> summary;
    for (const auto &c : configurations()) {
        if (!runs(c)) {
            continue;
        }
        // How long the call takes to stand (or, for the helper, to end): kills are spread from
        // the runtime's start to a little past that, and one in four waits for the target to
        // stand first, so that the kills cover the target's life and not only the set-up.
        std::chrono::milliseconds span{0};
        int kills = 0;
        int kills_with_target_up = 0;
        int kills_leaving_processes = 0;
        const int wanted = repetitions(c.kills);
        for (int k = 0; kills < wanted; ++k) {
            const auto marker = sleep_marker();
            // Where the target may write: the workspace, which the grader (root with no
            // capability, as root) cannot once a killed call left it lent to the sandbox.
            const auto ready =
                (c.kind == Kind::grader ? own_ : workspace()) / ("ready-" + random_token());
            const auto started = std::chrono::steady_clock::now();
            Process runtime = start_call(c, marker, survivor(marker, ready));
            if (k == 0 && c.kind == Kind::missing_program) {
                span = runtime.wait().elapsed;  // the helper's call ends by itself
                continue;
            }
            if (c.kind != Kind::missing_program && k % 4 == 0) {
                ASSERT_TRUE(eventually([&] { return fs::exists(ready); }, 30s))
                    << c.name << ": the target never stood";
                if (k == 0) {
                    span = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started);
                }
                std::uniform_int_distribution<long> moment{0, span.count() / 4};
                std::this_thread::sleep_for(std::chrono::milliseconds{moment(random)});
            } else {
                std::uniform_int_distribution<long> moment{0, span.count() * 5 / 4 + 5};
                std::this_thread::sleep_until(started + std::chrono::milliseconds{moment(random)});
            }
            ++kills;
            const bool target_up = fs::exists(ready);
            kills_with_target_up += target_up ? 1 : 0;
            ::kill(runtime.pid(), SIGKILL);
            const auto killed = runtime.wait();
            const auto left = left_running(marker, 3s);
            kills_leaving_processes += left.empty() ? 0 : 1;
            for (const auto &s : left) {
                failures.push_back(std::string{c.name} + ", kill " + std::to_string(k) + " after " +
                                   std::to_string(killed.elapsed.count()) + " ms" +
                                   (target_up ? " (target up)" : "") + ": " + s);
            }

            if (c.own_identity) {
                // Nothing runs as the call's identity, whether the test found it or not.
                std::vector<pid_t> of_identity;
                eventually(
                    [&] {
                        reap_orphans();
                        of_identity = processes_of(own_identity);
                        return of_identity.empty();
                    },
                    3s);
                for (const pid_t pid : of_identity) {
                    failures.push_back(std::string{c.name} + ", kill " + std::to_string(k) +
                                       ": left running as the call's identity: " + describe(pid));
                    ::kill(pid, SIGKILL);
                }
                // The killed runtime's hold on the identity went with it.
                const auto lock = "/run/tea-evaluate/identities/" + std::to_string(own_identity);
                const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
                if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
                    failures.push_back(std::string{c.name} + ", kill " + std::to_string(k) +
                                       ": the identity's lock " + lock + " is still held");
                }
                if (fd >= 0) {
                    ::close(fd);
                }
            }

            // The next run over the same private root reclaims what the killed one left; with an
            // identity per call, it takes the same one id again (no process of it left, its lock
            // let go).
            const auto next = run({.command = {"/usr/bin/id", "-u"},
                                   .config = config_of(c),
                                   .env = env(),
                                   .options = {"--observer", "none"}});
            EXPECT_EQ(next.status, 0) << c.name << "\n" << next;
            if (c.own_identity) {
                EXPECT_EQ(next.out, std::to_string(own_identity) + "\n") << next;
            }
            for (const auto &name : tree(root_)) {
                if (kept.count(name) == 0) {
                    failures.push_back(std::string{c.name} + ", kill " + std::to_string(k) +
                                       ": the next run left " + (root_ / name).string());
                }
            }
            for (const auto &name : tree(tmp_)) {
                failures.push_back(std::string{c.name} + ", kill " + std::to_string(k) +
                                   ": left in the temp directory: " + name);
            }
        }
        summary.push_back(std::string{c.name} + ": " + std::to_string(kills) + " kills, " +
                          std::to_string(kills_with_target_up) + " with the target standing, " +
                          std::to_string(kills_leaving_processes) + " leaving processes");
        // Kills that found the target standing: without them the test would show only set-up.
        if (c.kind != Kind::missing_program) {
            EXPECT_GE(kills_with_target_up, wanted / 4) << c.name;
        }
    }
    std::string all;
    for (const auto &line : summary) {
        std::cout << line << "\n";
    }
    for (const auto &f : failures) {
        all += f + "\n";
    }
    EXPECT_TRUE(failures.empty()) << failures.size() << " failures:\n" << all;
}

INSTANTIATE_TEST_SUITE_P(Identities, ProcessesOfAKilledRuntime,
                         ::testing::Values(Identity::invoker, Identity::unprivileged),
                         identity_name);

}  // namespace
}  // namespace tea::test::bwrap
