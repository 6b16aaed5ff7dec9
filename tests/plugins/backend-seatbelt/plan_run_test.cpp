// The Seatbelt backend through the runtime, on Linux: the real plugin module loaded through its
// manifest, its plan run by the runtime's call runner with a stand-in for sandbox-exec that records
// what it was handed (argv, environment, descriptors, working directory, limits) and then runs the
// command as sandbox-exec does once its profile stands. And `plugins` and `auto` on a host that
// is not macOS.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "exec/call_runner.hpp"
#include "plugins/loader.hpp"
#include "plugins/manifest.hpp"
#include "sbpl_checker.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/terminal.hpp"

namespace tea {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

std::vector<std::string> split_nul(const std::string &text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (auto end = text.find('\0'); end != std::string::npos; end = text.find('\0', start)) {
        out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

class SeatbeltPlanRun : public ::testing::Test {
   protected:
    void SetUp() override {
        const stdfs::path library{TEA_SEATBELT_PLUGIN};
        std::ofstream{dir_ / "seatbelt.toml"}
            << "name = \"seatbelt\"\nkind = \"backend\"\nabi = \"1.10\"\nlibrary = \""
            << library.string() << "\"\n";
        plugin_ = plugins::load_plugin(
            plugins::read_manifest(dir_ / "seatbelt.toml", library.parent_path()));
        // The stand-in: what sandbox-exec was handed, then the command, as sandbox-exec runs it
        // once the profile is applied.
        const auto record = (dir_ / "record").string();
        stdfs::create_directory(record);
        test::write_file(stand_in_.string(),
                         "#!/bin/sh\n"
                         "r='" +
                             record +
                             "'\n"
                             // First, and unredirected: a shell keeps a copy of a descriptor it
                             // redirects for itself; the listing goes to the call's output.
                             "ls -l /proc/$$/fd\n"
                             "printf '%s\\0' \"$@\" > \"$r/argv\"\n"
                             // The environment exactly as exec handed it, names a shell would drop
                             // included.
                             "cat /proc/$$/environ > \"$r/env\"\n"
                             "pwd > \"$r/cwd\"\n"
                             // pid, process group, session, controlling terminal (0: none).
                             "cut -d' ' -f1,5,6,7 /proc/$$/stat > \"$r/session\"\n"
                             "ulimit -t > \"$r/cpu\"\n"
                             // In bytes, whatever unit the shell's ulimit counts in.
                             "awk '/^Max file size/ {print $4}' /proc/$$/limits > \"$r/fsize\"\n"
                             "[ \"$1\" = -p ] || exit 64\n"
                             "shift 2\n"
                             "exec \"$@\"\n");
        ::chmod(stand_in_.c_str(), 0755);
        for (const auto &d : {root_ / "run-1" / "home", root_ / "run-1" / "tmp-1", ws_}) {
            stdfs::create_directories(d);
        }
    }

    exec::ExecPlan prepare(const exec::LaunchSpec &spec) {
        const json config{{"sandbox_exec", stand_in_.string()}};
        const auto instance = plugin_->create(config.dump());
        const auto &ops = std::get<tea_backend_ops>(plugin_->ops());
        return exec::exec_plan_from_json(
            instance->transform(ops.prepare, "prepare", documents::encode(spec)));
    }

    exec::LaunchSpec spec() const {
        exec::LaunchSpec s;
        s.argv = {"/bin/sh", "-c", "echo target-ran; exit 7"};
        s.env = {"PATH=/usr/bin:/bin", "KEEP=a b", "NODE_V8_COVERAGE=/x",
                 "BASH_FUNC_f%%=() { :; }"};
        s.workspace = ws_.string();
        s.cwd = ws_.string();
        s.home = (root_ / "run-1" / "home").string();
        s.temp_dir = (root_ / "run-1" / "tmp-1").string();
        s.withhold = {(ws_ / ".tea").string()};
        s.limits.cpu_seconds = 77;
        return s;
    }

    std::string recorded(const std::string &name) const {
        return test::read_file((dir_ / "record" / name).string());
    }

    test::TempDir tmp_{"tea-seatbelt-run"};
    stdfs::path dir_ = tmp_.path();
    stdfs::path stand_in_ = dir_ / "sandbox-exec";
    stdfs::path root_ = dir_ / "private-root";
    stdfs::path ws_ = dir_ / "work space";
    std::shared_ptr<const plugins::LoadedPlugin> plugin_;
};

TEST_F(SeatbeltPlanRun, TheRunnerHandsSandboxExecTheProfileTheEnvironmentAndNothingElse) {
    const auto s = spec();
    const auto plan = prepare(s);
    exec::RunOptions options;
    options.out.file = dir_ / "out";
    options.out.cap_bytes = 4096;
    const auto result = exec::run_call(plan, options);
    ASSERT_TRUE(result.started) << result.start_error;
    EXPECT_EQ(result.status(), 7);  // the target's own status comes back through sandbox-exec
    const auto out = test::read_file((dir_ / "out").string());
    EXPECT_NE(out.find("\ntarget-ran\n"), std::string::npos) << out;

    // argv: -p, the profile (which parses and closes the withheld folder), the target's argv.
    const auto argv = split_nul(recorded("argv"));
    ASSERT_EQ(argv.size(), 5U);
    EXPECT_EQ(argv[0], "-p");
    const auto rules = seatbelt::test::rules_of(argv[1]);
    EXPECT_FALSE(seatbelt::test::allowed(rules, "file-read-data", s.withhold[0] + "/x"));
    EXPECT_TRUE(seatbelt::test::allowed(rules, "file-read-data", s.workspace + "/x"));
    EXPECT_EQ(std::vector<std::string>(argv.begin() + 2, argv.end()), s.argv);

    // The environment: exactly the spec's, but for the names the confinement owns.
    auto env = split_nul(recorded("env"));
    std::sort(env.begin(), env.end());
    std::vector<std::string> expected{"PATH=/usr/bin:/bin",
                                      "KEEP=a b",
                                      "BASH_FUNC_f%%=() { :; }",
                                      "PWD=" + s.cwd,
                                      "HOME=" + s.home,
                                      "XDG_CONFIG_HOME=" + s.home + "/.config",
                                      "XDG_CACHE_HOME=" + s.home + "/.cache",
                                      "XDG_DATA_HOME=" + s.home + "/.local/share",
                                      "TMPDIR=" + s.temp_dir,
                                      "TMP=" + s.temp_dir,
                                      "TEMP=" + s.temp_dir};
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(env, expected);

    // Descriptors: 0-2 alone (the shell's own reading of its script aside).
    std::set<std::string> fds;
    std::istringstream lines{out.substr(0, out.find("target-ran"))};
    for (std::string line; std::getline(lines, line);) {
        const auto arrow = line.find(" -> ");
        if (arrow == std::string::npos || line.find(stand_in_.string()) != std::string::npos) {
            continue;
        }
        const auto name_end = arrow;
        const auto name_start = line.rfind(' ', name_end - 1) + 1;
        fds.insert(line.substr(name_start, name_end - name_start));
    }
    EXPECT_EQ(fds, (std::set<std::string>{"0", "1", "2"})) << out;
    EXPECT_EQ(recorded("cwd"), s.cwd + "\n");
    EXPECT_EQ(recorded("cpu"), "77\n");  // the limits macOS has, set before sandbox-exec
    // The spec sets no file size: the backend's default, as under bubblewrap (4 GiB).
    EXPECT_EQ(recorded("fsize"), std::to_string(std::uint64_t{4} << 30U) + "\n");
}

// macOS has no pid namespace and the profile allows ioctls on /dev/tty, so the plan starts
// sandbox-exec in a session of its own (newSession): run by a runtime whose controlling terminal
// is a pseudo-terminal, the stand-in leads its session and its process group and has no
// controlling terminal, nor has anything it starts. Control: the same plan with newSession taken
// off runs in the runtime's session, on its terminal.
TEST_F(SeatbeltPlanRun, SandboxExecStartsInASessionOfItsOwnWithoutTheTerminal) {
    // pid, process group, session and controlling terminal of the stand-in.
    const auto session_of = [&](const exec::ExecPlan &plan) {
        test::Terminal terminal;
        // The runner makes its output file afresh; the stand-in writes its record anew.
        stdfs::remove(dir_ / "out");
        stdfs::remove(dir_ / "record" / "session");
        exec::RunOptions options;
        options.out.file = dir_ / "out";
        options.out.cap_bytes = 4096;
        const pid_t runtime = ::fork();
        if (runtime == 0) {
            // A session leader with no terminal takes the one it opens (no O_NOCTTY).
            if (::setsid() < 0 || ::open(terminal.path().c_str(), O_RDWR | O_CLOEXEC) < 0) {
                ::_exit(101);
            }
            try {
                ::_exit(exec::run_call(plan, options).status());
            } catch (...) {
                ::_exit(102);
            }
        }
        int status = 0;
        ::waitpid(runtime, &status, 0);
        (void)terminal.output();
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << status;
        std::vector<long> ids;
        std::istringstream fields{recorded("session")};
        for (long id = 0; fields >> id;) {
            ids.push_back(id);
        }
        EXPECT_EQ(ids.size(), 4U) << recorded("session");
        ids.resize(4);
        return ids;
    };
    auto plan = prepare(spec());
    ASSERT_TRUE(plan.child.new_session);
    const auto alone = session_of(plan);
    EXPECT_EQ(alone[1], alone[0]);  // its own process group, ended whole at the call's end
    EXPECT_EQ(alone[2], alone[0]);  // its own session
    EXPECT_EQ(alone[3], 0);         // no controlling terminal

    plan.child.new_session = false;
    const auto shared = session_of(plan);
    EXPECT_EQ(shared[1], shared[0]);
    EXPECT_NE(shared[2], shared[0]);
    EXPECT_NE(shared[3], 0);
}

TEST_F(SeatbeltPlanRun, AHostilePathIsRefusedThroughTheAbiWithItsStatus) {
    auto s = spec();
    s.system_paths = {"/opt/a\"b"};
    const json config{{"sandbox_exec", stand_in_.string()}};
    const auto instance = plugin_->create(config.dump());
    const auto &ops = std::get<tea_backend_ops>(plugin_->ops());
    try {
        (void)instance->transform(ops.prepare, "prepare", documents::encode(s));
        ADD_FAILURE() << "a quote in a system path was taken";
    } catch (const std::exception &e) {
        EXPECT_NE(std::string{e.what()}.find("/opt/a"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(stdfs::exists(dir_ / "record" / "argv"));  // nothing ran
}

std::vector<std::string> cli(std::initializer_list<std::string> args) {
    std::vector<std::string> out{TEA_EVALUATE_BIN};
    out.insert(out.end(), args);
    return out;
}

std::vector<std::string> cli_env() {
    return test::environment_with(
        {"XDG_CONFIG_HOME=/nonexistent-tea-test", "HOME=/nonexistent-tea-test"});
}

TEST(SeatbeltOnLinux, PluginsSaysMacOsOnlyForBoth) {
    const auto o = test::run(cli({"plugins", "--json"}), cli_env());
    ASSERT_EQ(o.status, 0) << o.err;
    std::set<std::string> seen;
    const auto doc = json::parse(o.out);
    for (const auto &p : doc["plugins"]) {
        const auto name = p["name"].get<std::string>();
        if (name == "seatbelt" || name == "logstream") {
            seen.insert(name);
            EXPECT_TRUE(p["loaded"].get<bool>()) << p;
            EXPECT_FALSE(p["available"].get<bool>()) << p;
            EXPECT_EQ(p["reason"].get<std::string>().rfind("macOS only", 0), 0U) << p;
        }
    }
    EXPECT_EQ(seen, (std::set<std::string>{"seatbelt", "logstream"})) << o.out;
}

TEST(SeatbeltOnLinux, AutoNeverPicksSeatbeltOrTheLogStream) {
    const auto dir = test::make_temp_dir("tea-seatbelt-auto");
    // Seatbelt first: auto passes over it to bubblewrap, and the call runs confined.
    test::write_file(dir + "/first.toml",
                     "[confinement]\nauto_order = [\"seatbelt\", \"bubblewrap\"]\n");
    const auto first = test::run(
        cli({"--config", dir + "/first.toml", "--json", "exec", "--", "true"}), cli_env());
    EXPECT_EQ(first.status, 0) << first.err;
    EXPECT_EQ(json::parse(first.out, nullptr, false).value("confinement", ""), "bubblewrap")
        << first.out;
    // Seatbelt alone: nothing available, exit 12 naming why.
    test::write_file(dir + "/only.toml", "[confinement]\nauto_order = [\"seatbelt\"]\n");
    const auto only =
        test::run(cli({"--config", dir + "/only.toml", "exec", "--", "true"}), cli_env());
    EXPECT_EQ(only.status, 12);
    EXPECT_NE(only.err.find("seatbelt: macOS only"), std::string::npos) << only.err;
    // The default audit order never names the log stream; put first, auto passes over it to the
    // next observer that works, and the call is audited by it, never unaudited.
    test::write_file(dir + "/audit.toml", "[audit]\nauto_order = [\"logstream\", \"strace\"]\n");
    const auto audit =
        test::run(cli({"--config", dir + "/audit.toml", "exec", "--", "true"}), cli_env());
    EXPECT_EQ(audit.status, 0) << audit.err;
    EXPECT_NE(audit.err.find("audit (strace)"), std::string::npos) << audit.err;
    // The log stream alone: no observer works, exit 12 naming why.
    test::write_file(dir + "/alone.toml", "[audit]\nauto_order = [\"logstream\"]\n");
    const auto alone =
        test::run(cli({"--config", dir + "/alone.toml", "exec", "--", "true"}), cli_env());
    EXPECT_EQ(alone.status, 12);
    EXPECT_NE(alone.err.find("macOS only"), std::string::npos) << alone.err;
    stdfs::remove_all(dir);
}

}  // namespace
}  // namespace tea
