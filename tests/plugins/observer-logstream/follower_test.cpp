// The follower end to end on Linux, against stand-ins for `log` (tail -f of a file) and for
// sandbox-exec (which writes, into that file, the report Seatbelt would log for the profile's one
// refused path), and the plugin's collect over what it left, through the real plugin's table.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "audit/observation.hpp"
#include "plugins/loader.hpp"
#include "plugins/manifest.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

// A report line as the stand-ins write it (the parser's own tests hold Apple's full form).
std::string report_command(const std::string &path_expression, const std::string &fake_log) {
    return "printf '%s\\n' \"{\\\"eventType\\\":\\\"logEvent\\\",\\\"senderImagePath\\\":"
           "\\\"/System/Library/Extensions/Sandbox.kext/Contents/MacOS/Sandbox\\\","
           "\\\"eventMessage\\\":\\\"Sandbox: cat(77) deny(1) file-read-data " +
           path_expression + "\\\"}\" >> '" + fake_log + "'\n";
}

class Follower : public ::testing::Test {
   protected:
    void SetUp() override {
        test::write_file(fake_log_.string(), "");  // the unified log, empty so far
        stdfs::create_directory(trace_);
        // `log stream ...`: the fake log from its start, followed.
        write_script(log_, "exec tail -n +1 -f '" + fake_log_.string() + "'\n");
        // sandbox-exec -p PROFILE PROGRAM ARGS: the report for the profile's literal path, when
        // this stand-in still reports (a file `mute-after` holds how many it may).
        write_script(sandbox_exec_, "n=$(cat '" + (dir_ / "count").string() +
                                        "' 2>/dev/null || echo 0); echo $((n+1)) > '" +
                                        (dir_ / "count").string() +
                                        "'\n"
                                        "limit=$(cat '" +
                                        (dir_ / "mute-after").string() +
                                        "' 2>/dev/null || echo 99)\n"
                                        "[ \"$n\" -ge \"$limit\" ] && exit 1\n"
                                        "p=${2#*literal \\\"}; p=${p%%\\\"*}\n" +
                                        report_command("$p", fake_log_.string()) + "exit 1\n");
        const stdfs::path library{TEA_LOGSTREAM_PLUGIN};
        std::ofstream{dir_ / "logstream.toml"}
            << "name = \"logstream\"\nkind = \"observer\"\nabi = \"1.6\"\nlibrary = \""
            << library.string() << "\"\n";
        plugin_ = plugins::load_plugin(
            plugins::read_manifest(dir_ / "logstream.toml", library.parent_path()));
    }

    static void write_script(const stdfs::path &path, const std::string &body) {
        test::write_file(path.string(), "#!/bin/sh\n" + body);
        ::chmod(path.c_str(), 0755);
    }

    test::Outcome follow(const std::string &target_script, const std::string &wait_ms = "5000") {
        return test::run({TEA_LOGSTREAM_FOLLOWER, "--trace-dir", trace_.string(), "--log",
                          log_.string(), "--sandbox-exec", sandbox_exec_.string(),
                          "--canary-wait-ms", wait_ms, "--", "/bin/sh", "-c", target_script},
                         {"PATH=/usr/bin:/bin", "MARK=kept"});
    }

    // collect, through the plugin; throws what the plugin failed with.
    audit::Observation collect() {
        const auto instance = plugin_->create("{}");
        const auto &ops = std::get<tea_observer_ops>(plugin_->ops());
        const json request{{"traceDir", trace_.string()}, {"initialCwd", "/"}};
        return audit::observation_from_json(
            instance->transform(ops.collect, "collect", request.dump()));
    }

    test::TempDir tmp_{"tea-logstream-follow"};
    stdfs::path dir_ = tmp_.path();
    stdfs::path fake_log_ = dir_ / "unified.log";
    stdfs::path trace_ = dir_ / "trace";
    stdfs::path log_ = dir_ / "log";
    stdfs::path sandbox_exec_ = dir_ / "sandbox-exec";
    std::shared_ptr<const plugins::LoadedPlugin> plugin_;
};

TEST_F(Follower, TheCallsRefusalsBetweenTheCanariesAreCollectedAndTheChannelIsComplete) {
    const auto o = follow(report_command("/Users/dev/.ssh/id_ed25519", fake_log_.string()) +
                          "echo \"$MARK\"; exit 3");
    EXPECT_EQ(o.status, 3) << o.err;  // the plan's own status
    EXPECT_EQ(o.out, "kept\n");       // its environment and stdout, as the follower was given them
    const auto observation = collect();
    EXPECT_TRUE(observation.complete) << observation.reason;
    ASSERT_EQ(observation.events.size(), 1U);
    EXPECT_EQ(observation.events[0].path_asked, "/Users/dev/.ssh/id_ed25519");
    const auto record = json::parse(test::read_file((trace_ / "follow.json").string()));
    EXPECT_EQ(record["canaries"].size(), 2U);
}

TEST_F(Follower, AClosingCanaryTheLogNeverDeliversMakesTheCallLossy) {
    test::write_file((dir_ / "mute-after").string(), "1");  // the readiness canary alone
    const auto o = follow("exit 0", "300");
    EXPECT_EQ(o.status, 0) << o.err;
    const auto observation = collect();
    EXPECT_FALSE(observation.complete);
    EXPECT_NE(observation.reason.find("delivered 1 of 2 canary reads"), std::string::npos)
        << observation.reason;
}

TEST_F(Follower, ALogThatDeliversNothingStopsTheCallBeforeItRunsWithExit12) {
    write_script(log_, "exec sleep 60\n");  // follows nothing
    const auto marker = dir_ / "target-ran";
    const auto o = follow("touch '" + marker.string() + "'", "300");
    EXPECT_EQ(o.status, 12);
    EXPECT_NE(o.err.find("did not deliver the readiness probe's report"), std::string::npos)
        << o.err;
    EXPECT_FALSE(stdfs::exists(marker));  // the target never ran unobserved
    try {
        (void)collect();
        ADD_FAILURE() << "collect took a log that was never followed";
    } catch (const std::exception &e) {
        EXPECT_NE(std::string{e.what()}.find("could not be followed"), std::string::npos)
            << e.what();
    }
}

TEST_F(Follower, WrapPutsTheFollowerInFrontOfASeatbeltPlanAndRefusesAnyOther) {
    const auto instance = plugin_->create("{}");
    const auto &ops = std::get<tea_observer_ops>(plugin_->ops());
    json plan{{"argv", {"/usr/bin/sandbox-exec", "-p", "(version 1)", "/bin/true"}},
              {"env", json::array()},
              {"cwd", "/"},
              {"confinement", "seatbelt"}};
    const json request{{"plan", plan}, {"traceDir", trace_.string()}};
    const auto wrapped = json::parse(instance->transform(ops.wrap, "wrap", request.dump()));
    const auto argv = wrapped["argv"].get<std::vector<std::string>>();
    ASSERT_GE(argv.size(), 9U);
    EXPECT_EQ(stdfs::path{argv[0]}.filename(), "tea-logstream-follow");
    EXPECT_EQ(argv[2], trace_.string());
    EXPECT_EQ(argv[7], "--");
    EXPECT_EQ(argv[8], "/usr/bin/sandbox-exec");
    plan["confinement"] = "bubblewrap";
    const json other{{"plan", plan}, {"traceDir", trace_.string()}};
    EXPECT_THROW((void)instance->transform(ops.wrap, "wrap", other.dump()), std::exception);
}

}  // namespace
}  // namespace tea
