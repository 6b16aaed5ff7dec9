// The call module (core/call/session.hpp) driven by real plugins: each step of a call made to
// fail by a fixture plugin (tests/fixtures/fixture_call_plugin.cpp), and checked to leave nothing
// of the call behind in the private root.
#include "call/session.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <tea/plugin.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "bridge/service_bridge.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "tea_fixtures.h"
#include "util/error.hpp"

namespace tea::call {
namespace {

namespace stdfs = std::filesystem;

void write(const stdfs::path &file, const std::string &text) {
    test::write_file(file.string(), text);
}

std::string read(const stdfs::path &file) {
    return test::read_file(file.string());
}

// The minor each manifest names is the one its plugin implements: the loader refuses any other.
std::string manifest(const std::string &name, const std::string &kind, const std::string &library,
                     unsigned minor = TEA_ABI_1_6) {
    return "name = \"" + name + "\"\nkind = \"" + kind + "\"\nabi = \"1." + std::to_string(minor) +
           "\"\nlibrary = \"" + library + "\"\n";
}

// A call session over the fixture plugins, in a directory of its own: the manifests, the
// configuration, the private root, the workspace and the backend's log of its prepares.
class CallSessionTest : public ::testing::Test {
   protected:
    CallSessionTest() {
        stdfs::create_directories(dir_.path() / "plugins.d");
        stdfs::create_directories(workspace());
        stdfs::permissions(workspace(), stdfs::perms::owner_all | stdfs::perms::group_read |
                                            stdfs::perms::group_exec | stdfs::perms::others_read |
                                            stdfs::perms::others_exec);
        write(dir_.path() / "plugins.d" / "call-backend.toml",
              manifest("call-backend", "backend", TEA_FIXTURE_CALL_BACKEND));
        write(dir_.path() / "plugins.d" / "call-backend-bridge.toml",
              manifest("call-backend-bridge", "backend", TEA_FIXTURE_CALL_BACKEND_BRIDGE,
                       TEA_ABI_1_10));
        write(dir_.path() / "plugins.d" / "call-observer.toml",
              manifest("call-observer", "observer", TEA_FIXTURE_CALL_OBSERVER));
        write(dir_.path() / "plugins.d" / "stager-backend.toml",
              manifest("stager-backend", "backend", TEA_FIXTURE_STAGER_BACKEND, TEA_ABI_1_5));
#ifdef TEA_OPT_OUT_PLUGIN
        write(dir_.path() / "plugins.d" / "opt-out.toml",
              manifest("opt-out", "backend", TEA_OPT_OUT_PLUGIN, TEA_ABI_1_9));
#endif
#ifdef TEA_STRACE_PLUGIN
        write(dir_.path() / "plugins.d" / "strace.toml",
              manifest("strace", "observer", TEA_STRACE_PLUGIN));
#endif
    }

    // backend: "call-backend" or "stager-backend" with its mode; observer: "none",
    // "call-observer" with its mode, or "strace".
    std::unique_ptr<CallSession> open(const std::string &backend, const std::string &mode,
                                      const std::string &observer = "none",
                                      const std::string &observer_mode = "",
                                      const std::string &shell = "/bin/sh") {
        const auto config = dir_.path() / "config.toml";
        write(config, "[confinement]\nbackend = \"" + backend + "\"\n[audit]\nobserver = \"" +
                          observer + "\"\n[plugins]\npaths = [\"" +
                          (dir_.path() / "plugins.d").string() + "\"]\n[plugin." + backend +
                          "]\nmode = \"" + mode + "\"\nlog = \"" + log().string() +
                          "\"\nshell = \"" + shell + "\"\n[plugin.call-observer]\nmode = \"" +
                          observer_mode + "\"\nlog = \"" + log().string() + "\"\n");
        config::Sources sources;
        sources.read_user_file = false;
        sources.explicit_file = config;
        auto cfg = config::load(sources);
        auto paths = RuntimePaths::detect();
        auto registry = plugins::Registry::discover({dir_.path() / "plugins.d"}, "/nonexistent");
        return std::make_unique<CallSession>(
            Runtime{std::move(cfg), std::move(paths), std::move(registry)}, private_root());
    }

    // A session over `backend` with no table of its own (the opt-out backend takes none).
    std::unique_ptr<CallSession> open_unconfigured(const std::string &backend) {
        const auto config = dir_.path() / "config.toml";
        write(config, "[confinement]\nbackend = \"" + backend +
                          "\"\n[audit]\nobserver = \"none\"\n[plugins]\npaths = [\"" +
                          (dir_.path() / "plugins.d").string() + "\"]\n");
        config::Sources sources;
        sources.read_user_file = false;
        sources.explicit_file = config;
        auto registry = plugins::Registry::discover({dir_.path() / "plugins.d"}, "/nonexistent");
        return std::make_unique<CallSession>(
            Runtime{config::load(sources), RuntimePaths::detect(), std::move(registry)},
            private_root());
    }

    // A copy of /bin/sh of this test's own: a plan that runs it is one no confirmation stamp of
    // another test vouches for.
    [[nodiscard]] std::string own_shell() const {
        const auto copy = dir_.path() / "sh";
        stdfs::copy_file("/bin/sh", copy, stdfs::copy_options::overwrite_existing);
        return copy.string();
    }

    [[nodiscard]] stdfs::path workspace() const {
        return dir_.path() / "workspace";
    }
    [[nodiscard]] stdfs::path private_root() const {
        return dir_.path() / "private";
    }
    [[nodiscard]] stdfs::path log() const {
        return dir_.path() / "prepares.log";
    }

    exec::LaunchSpec spec(std::vector<std::string> argv) const {
        exec::LaunchSpec s;
        s.argv = std::move(argv);
        s.env = {"PATH=/usr/bin:/bin", "LANG=C"};
        s.workspace = workspace().string();
        s.cwd = s.workspace;
        const auto paths = RuntimePaths::detect();
        s.runtime_prefix = paths.prefix.string();
        s.helper_dir = paths.helper_dir.string();
        return s;
    }

    static exec::RunOptions run(const stdfs::path &err = {}) {
        exec::RunOptions r;
        r.timeout = std::chrono::seconds{60};
        r.kill_grace = std::chrono::milliseconds{500};
        r.err.file = err;
        r.err.cap_bytes = 1 << 16;
        return r;
    }

    // What the calls left in the private root: nothing of a call's run directory.
    [[nodiscard]] std::vector<std::string> left_behind() const {
        std::vector<std::string> out;
        for (const auto &e : stdfs::directory_iterator{private_root()}) {
            const auto name = e.path().filename().string();
            if (name.find("run-") != std::string::npos) {
                out.push_back(name);
            }
        }
        return out;
    }

    // The backend's prepares, in order ("staged" or "prepare").
    [[nodiscard]] std::vector<std::string> prepares() const {
        std::vector<std::string> out;
        std::istringstream lines{read(log())};
        for (std::string line; std::getline(lines, line);) {
            out.push_back(line);
        }
        return out;
    }

    // The exit code an Error of `f` carries, and its sentence in *what.
    template <typename F>
    static int error_code(F &&f, std::string *what = nullptr) {
        try {
            f();
        } catch (const Error &e) {
            if (what != nullptr) {
                *what = e.what();
            }
            return static_cast<int>(e.code());
        }
        return 0;
    }

   private:
    test::TempDir dir_{"tea-call-session", stdfs::perms::owner_all | stdfs::perms::group_exec |
                                               stdfs::perms::others_exec};
};

TEST_F(CallSessionTest, ACallReportsItsTargetsStatusAfterOnePrepare) {
    const auto session = open("call-backend", "plain");
    const auto outcome = session->call(spec({"sh", "-c", "exit 7"}), run());
    EXPECT_EQ(outcome.status, 7);
    EXPECT_EQ(outcome.confinement, "fixture");
    EXPECT_FALSE(outcome.audit.audited);
    EXPECT_FALSE(outcome.target_never_started);
    // The normal path asks the backend once (here the staged ask, answered with a whole plan).
    EXPECT_EQ(prepares(), (std::vector<std::string>{"staged"}));
    EXPECT_TRUE(left_behind().empty());
}

TEST_F(CallSessionTest, ATimedOutCallReports124AndLeavesNothing) {
    const auto session = open("call-backend", "plain");
    auto options = run();
    options.timeout = std::chrono::milliseconds{200};
    const auto outcome = session->call(spec({"sleep", "30"}), options);
    EXPECT_TRUE(outcome.result.timed_out);
    EXPECT_EQ(outcome.status, 124);
    EXPECT_TRUE(left_behind().empty());
}

// The confinement ended before the target started (its setup mark untaken): the call is made once
// more with a fresh plan, and the target runs once.
TEST_F(CallSessionTest, ACallWhoseConfinementEndedBeforeItsTargetIsRetriedOnce) {
    const auto session = open("call-backend", "fail-once");
    const auto outcome = session->call(spec({"sh", "-c", "echo ran >> ran"}), run(), {}, {});
    EXPECT_EQ(outcome.status, 0);
    EXPECT_FALSE(outcome.target_never_started);
    EXPECT_EQ(read(workspace() / "ran"), "ran\n");
    EXPECT_EQ(prepares(), (std::vector<std::string>{"staged", "prepare"}));
    EXPECT_TRUE(left_behind().empty());
}

// The retry of a call whose confinement ended before its target started, with a bridge: what the
// first attempt left in the bridge's directory (a port, a socket) is gone, and the retry's target
// finds an empty port file alone (before the reset it read the first attempt's 4444).
TEST_F(CallSessionTest, ARetriedServiceFindsAFreshEmptyPortFile) {
    const auto session = open("call-backend-bridge", "fail-once");
    ServiceBridgeRequest request;
    request.wanted = true;
    const auto outcome = session->call(
        spec(
            {"sh", "-c", R"({ cat "$TEA_PORT_FILE"; echo; ls -A "${TEA_PORT_FILE%/*}"; } > seen)"}),
        run(), {}, {}, request);
    EXPECT_EQ(outcome.status, 0);
    EXPECT_EQ(prepares(), (std::vector<std::string>{"staged", "prepare"}));
    EXPECT_EQ(read(workspace() / "seen"), "\nport\n");
    EXPECT_TRUE(left_behind().empty());
}

TEST_F(CallSessionTest, AStagedCallIsFinishedByItsCompletePlan) {
    const auto session = open("stager-backend", "match");
    const auto outcome = session->call(spec({"true"}), run());
    EXPECT_EQ(outcome.status, 0);
    EXPECT_EQ(read(workspace() / "got"), "the view");
    EXPECT_TRUE(left_behind().empty());
}

// Cleanup after a failure at each step: nothing of the call is left in the private root, and no
// staged process runs on.
TEST_F(CallSessionTest, AFailedPrepareLeavesNothing) {
    const auto session = open("call-backend", "fail-prepare");
    EXPECT_EQ(error_code([&] { (void)session->call(spec({"true"}), run()); }), 12);
    EXPECT_TRUE(left_behind().empty());
}

// A backend declaring a minor before 1.9 would drop the bridge and start the service with no way
// in: the call is refused (12) naming the backend, and the spec never reaches it. Control: the
// same call without a bridge runs (ACallReportsItsTargetsStatusAfterOnePrepare).
TEST_F(CallSessionTest, ABridgeIsNeverSentToABackendOlderThan19) {
    const auto session = open("call-backend", "plain");
    auto with_bridge = spec({"true"});
    with_bridge.bridge = {"/p/run-a/bridge-b", "/usr/libexec/tea-evaluate/tea-bridge-relay"};
    std::string what;
    EXPECT_EQ(error_code([&] { (void)session->call(with_bridge, run()); }, &what), 12);
    EXPECT_NE(what.find("'call-backend' (plugin ABI 1.6)"), std::string::npos) << what;
    EXPECT_NE(what.find("ABI 1.9"), std::string::npos) << what;
    EXPECT_TRUE(prepares().empty());
    EXPECT_TRUE(left_behind().empty());
}

// A plan's newSession (ABI 1.10) starts its process in a session of its own: the target (the
// plan's process, after its launcher's exec) leads a session. Control: the same backend without
// it leaves the target in the runtime's session. A backend declaring an older minor that sends it
// is refused (125) naming the field and its minor, as a host of that minor refuses the unknown
// field, and nothing runs.
TEST_F(CallSessionTest, ANewSessionIsHonouredFromABackendOf110AndRefusedFromAnOlderOne) {
    const auto leads_its_session = [&](const std::string &mode) {
        const auto session = open("call-backend-bridge", mode);
        const auto outcome = session->call(
            spec({"sh", "-c", "echo $$ > pid; cut -d' ' -f6 /proc/$$/stat > sid"}), run());
        EXPECT_EQ(outcome.status, 0);
        return read(workspace() / "pid") == read(workspace() / "sid");
    };
    EXPECT_TRUE(leads_its_session("new-session"));
    EXPECT_FALSE(leads_its_session("plain"));

    stdfs::remove(workspace() / "pid");
    const auto older = open("call-backend", "new-session");
    const auto call = [&] { (void)older->call(spec({"sh", "-c", "echo $$ > pid"}), run()); };
    std::string what;
    EXPECT_EQ(error_code(call, &what), 125);
    EXPECT_NE(what.find("newSession"), std::string::npos) << what;
    EXPECT_NE(what.find("declares 1.6"), std::string::npos) << what;
    EXPECT_FALSE(stdfs::exists(workspace() / "pid"));
    EXPECT_TRUE(left_behind().empty());
}

#ifdef TEA_OPT_OUT_PLUGIN
// The session makes the bridge's directory and port file, names the file in TEA_PORT_FILE, and
// hands the directory over before the target starts: a ServiceBridge on it reaches the service
// (python3's http.server) with curl while the call runs, and the directory goes with the call.
TEST_F(CallSessionTest, AServiceBridgesDirectoryIsMadeNamedAndRemovedWithTheCall) {
    const auto session = open_unconfigured("opt-out");
    auto service = spec({"python3", "-c",
                         "import http.server, os, threading, time\n"
                         "s = http.server.HTTPServer(('127.0.0.1', 0), "
                         "http.server.SimpleHTTPRequestHandler)\n"
                         "open(os.environ['TEA_PORT_FILE'], 'w').write(str(s.server_port))\n"
                         "threading.Thread(target=s.serve_forever, daemon=True).start()\n"
                         "while not os.path.exists('stop'): time.sleep(0.05)\n"});
    service.env = test::environment_with({});
    std::filesystem::path dir;
    std::string status;
    std::thread host;
    ServiceBridgeRequest request;
    request.wanted = true;
    request.dir_made = [&](const std::filesystem::path &made) {
        dir = made;
        host = std::thread([&, made] {
            // Unconfined, the service shares this process's network.
            bridge::ServiceBridge bridge({.dir = made,
                                          .pid = ::getpid(),
                                          .own_network = false,
                                          .call_ended = -1,
                                          .patience = std::chrono::milliseconds{20'000}});
            if (bridge.start()) {
                status = test::run(
                             {"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                              "10", "http://127.0.0.1:" + std::to_string(bridge.host_port()) + "/"},
                             test::environment_with({}))
                             .out;
            } else {
                status = *bridge.record().refusal;
            }
            write(workspace() / "stop", "");
        });
    };
    const auto outcome = session->call(service, run(), {}, {}, request);
    host.join();
    EXPECT_EQ(outcome.status, 0);
    EXPECT_EQ(status, "200");
    EXPECT_EQ(dir.parent_path().parent_path(), private_root());
    EXPECT_FALSE(stdfs::exists(dir));
    EXPECT_TRUE(left_behind().empty());
}
#endif

TEST_F(CallSessionTest, APlanThatLendsASystemDirectoryIsRefusedAndLeavesNothing) {
    const auto session = open("call-backend", "lend-etc");
    std::string what;
    EXPECT_EQ(error_code([&] { (void)session->call(spec({"true"}), run()); }, &what), 125);
    EXPECT_NE(what.find("/etc"), std::string::npos) << what;
    EXPECT_TRUE(left_behind().empty());
}

TEST_F(CallSessionTest, AStagedCallWhoseCompletePlanFailsIsKilledAndLeavesNothing) {
    const auto session = open("stager-backend", "fail");
    EXPECT_EQ(error_code([&] { (void)session->call(spec({"true"}), run()); }), 12);
    EXPECT_TRUE(stdfs::exists(workspace() / "started"));
    EXPECT_FALSE(stdfs::exists(workspace() / "done"));
    EXPECT_TRUE(left_behind().empty());
}

TEST_F(CallSessionTest, AStagedCallWhoseCompletePlanDiffersIsKilledAndLeavesNothing) {
    const auto session = open("stager-backend", "mismatch");
    EXPECT_EQ(error_code([&] { (void)session->call(spec({"true"}), run()); }), 125);
    EXPECT_FALSE(stdfs::exists(workspace() / "done"));
    EXPECT_TRUE(left_behind().empty());
}

TEST_F(CallSessionTest, AnObserverThatRefusesToWrapFailsTheCallAndLeavesNothing) {
    const auto session = open("call-backend", "plain", "call-observer", "refuse");
    std::string what;
    EXPECT_EQ(error_code([&] { (void)session->call(spec({"true"}), run()); }, &what), 12);
    EXPECT_NE(what.find("tracing is forbidden here"), std::string::npos) << what;
    EXPECT_FALSE(stdfs::exists(workspace() / "ran"));
    EXPECT_TRUE(left_behind().empty());
}

// The first call's observer is probed while its plan is prepared: the backend's prepare waits for
// the probe to begin, and the probe for the prepare before it ends. A probe made after the plan
// (as before) would begin only once the prepare's wait gave up, 2 s later, and after it. (The
// fixture observer sees nothing, so its confirmation then fails the call.)
TEST_F(CallSessionTest, TheObserverIsProbedWhileTheFirstPlanIsPrepared) {
    const auto session = open("call-backend", "await-probe", "call-observer", "slow-probe");
    std::string what;
    EXPECT_EQ(error_code([&] { (void)session->call(spec({"true"}), run()); }, &what), 12);
    EXPECT_NE(what.find("did not see a confined process read its probe file"), std::string::npos)
        << what;
    const auto lines = prepares();
    ASSERT_GE(lines.size(), 3U);
    EXPECT_EQ(lines[0], "probe begins");
    EXPECT_EQ(lines[1], "prepare");
    EXPECT_EQ(lines[2], "probe ends");
    EXPECT_TRUE(left_behind().empty());
}

// A plan that cannot be prepared is the call's failure, even while the observer's probe, begun
// with the call, fails too: the probe's answer is taken only once the plan stands. Control: with
// a plan that stands, the probe's failure fails the call.
TEST_F(CallSessionTest, APlanThatCannotBePreparedIsTheFailureWhenTheProbeFailsToo) {
    std::string what;
    {
        const auto session = open("call-backend", "fail-prepare", "call-observer", "unavailable");
        EXPECT_EQ(error_code([&] { (void)session->call(spec({"true"}), run()); }, &what), 12);
        EXPECT_NE(what.find("the plan cannot be made"), std::string::npos) << what;
        EXPECT_EQ(what.find("cannot work here"), std::string::npos) << what;
    }
    EXPECT_TRUE(left_behind().empty());
    const auto session = open("call-backend", "plain", "call-observer", "unavailable");
    EXPECT_EQ(error_code([&] { (void)session->call(spec({"true"}), run()); }, &what), 12);
    EXPECT_NE(what.find("cannot work here"), std::string::npos) << what;
    EXPECT_FALSE(stdfs::exists(workspace() / "ran"));
    EXPECT_TRUE(left_behind().empty());
}

// A session whose observer cannot work fails each call with the reason, the second as the first:
// a selection that failed leaves no call unaudited.
TEST_F(CallSessionTest, AnObserverThatCannotWorkFailsEveryCallOfTheSession) {
    const auto session = open("call-backend", "plain", "call-observer", "unavailable");
    for (int i = 0; i < 2; ++i) {
        std::string what;
        EXPECT_EQ(error_code(
                      [&] {
                          (void)session->call(spec({"sh", "-c", "echo ran > ran"}), run());
                      },
                      &what),
                  12)
            << "call " << i;
        EXPECT_NE(what.find("cannot work here"), std::string::npos) << what;
        EXPECT_FALSE(stdfs::exists(workspace() / "ran")) << "call " << i;
    }
    EXPECT_TRUE(left_behind().empty());
}

// An observer that sees nothing is never trusted: its confirmation probe fails, and no call runs.
TEST_F(CallSessionTest, AnObserverThatSeesNothingIsNotConfirmedAndLeavesNothing) {
    const auto session = open("call-backend", "plain", "call-observer", "blind");
    std::string what;
    EXPECT_EQ(error_code(
                  [&] {
                      (void)session->call(spec({"sh", "-c", "echo ran > ran"}), run());
                  },
                  &what),
              12);
    EXPECT_NE(what.find("did not see a confined process read its probe file"), std::string::npos)
        << what;
    EXPECT_FALSE(stdfs::exists(workspace() / "ran"));
    EXPECT_TRUE(left_behind().empty());
}

#ifdef TEA_STRACE_PLUGIN
// The whole observed path with a real tracer: chosen, confirmed, wrapped, collected and judged.
TEST_F(CallSessionTest, AnObservedCallListsWhatItReadOutsideItsGrants) {
    const auto outside = private_root().parent_path() / "outside";
    write(outside, "secret\n");
    const auto session = open("call-backend", "plain", "strace");
    const auto outcome = session->call(spec({"cat", outside.string()}), run());
    EXPECT_EQ(outcome.status, 0);
    ASSERT_TRUE(outcome.audit.audited) << outcome.audit.why_not;
    EXPECT_TRUE(outcome.audit.complete) << outcome.audit.reason;
    bool listed = false;
    for (const auto &f : outcome.audit.findings) {
        listed = listed || f.path == outside.string();
    }
    EXPECT_TRUE(listed);
    EXPECT_EQ(session->observer_name(), "strace");
    EXPECT_TRUE(left_behind().empty());
}

// A plan that fails before its target starts is reported as the backend's, with its own message,
// and not as a tracer the host forbids.
TEST_F(CallSessionTest, APlanThatFailsBeforeItsTargetIsNamedWithItsStderr) {
    const auto session = open("call-backend", "syntax-error", "strace", "", own_shell());
    std::string what;
    EXPECT_EQ(error_code([&] { (void)session->call(spec({"true"}), run()); }, &what), 12);
    EXPECT_NE(what.find("the confinement of the backend 'call-backend' ended (status 2)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("Syntax error"), std::string::npos) << what;  // the shell's own message
    EXPECT_EQ(what.find("ptrace"), std::string::npos) << what;
    EXPECT_TRUE(left_behind().empty());
}

// A target the plan's launcher cannot execute is the target's failure (126), not the host's.
TEST_F(CallSessionTest, ATargetThatCannotBeExecutedIsReportedAsTheTargetsExec) {
    const auto target = workspace() / "not-executable";
    write(target, "#!/bin/sh\necho ran\n");
    stdfs::permissions(target, stdfs::perms::owner_read | stdfs::perms::owner_write);
    const auto session = open("call-backend", "plain", "strace");
    const auto outcome = session->call(spec({target.string()}), run());
    EXPECT_EQ(outcome.status, 126);
    EXPECT_TRUE(outcome.target_never_started);
    EXPECT_EQ(outcome.start_failure.side, FailedSide::target_exec);
    EXPECT_NE(outcome.start_failure.sentence.find("could not be executed (status 126)"),
              std::string::npos)
        << outcome.start_failure.sentence;
    EXPECT_TRUE(left_behind().empty());
}
#endif

}  // namespace
}  // namespace tea::call
