// The strace observer's collect on traces written here, through the real plugin's table: how
// accesses merge into distinct events, what keeps two of them apart, and the cap on how many are
// kept. The audit under real strace and bwrap is audit_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "audit/observation.hpp"
#include "plugins/loader.hpp"
#include "plugins/manifest.hpp"
#include "support/temp_dir.hpp"

namespace tea::plugins {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

class Collect : public ::testing::Test {
   protected:
    void SetUp() override {
        const stdfs::path library{TEA_STRACE_PLUGIN};
        // The minor the strace observer declares (plugins/observer-strace/CMakeLists.txt).
        std::ofstream{dir_ / "strace.toml"} << "name = \"strace\"\nkind = \"observer\"\n"
                                            << "abi = \"1.6\"\nlibrary = \"" << library.string()
                                            << "\"\n";
        plugin_ = load_plugin(read_manifest(dir_ / "strace.toml", library.parent_path()));
    }
    // collect over `trace` (strace -f lines), every event the target's (no start to wait for).
    audit::Observation collect(const std::string &trace, const std::string &config = "{}") {
        std::ofstream{dir_ / "trace"} << trace;
        const auto instance = plugin_->create(config);
        const auto &ops = std::get<tea_observer_ops>(plugin_->ops());
        const json request{{"traceDir", dir_.string()}, {"initialCwd", "/w"}};
        return audit::observation_from_json(
            instance->transform(ops.collect, "collect", request.dump()));
    }

    static std::string open_line(int pid, const std::string &quoted_path,
                                 const std::string &resolved) {
        return std::to_string(pid) + " openat(AT_FDCWD</w>, " + quoted_path +
               ", O_RDONLY|O_CLOEXEC) = 3<" + resolved + ">\n";
    }

    test::TempDir tmp_{"tea-collect"};
    stdfs::path dir_ = tmp_.path();
    std::shared_ptr<const LoadedPlugin> plugin_;
};

TEST_F(Collect, RepeatedAccessesMergeWithTheirCountAndTheFirstPid) {
    const auto o =
        collect(open_line(10, "\"/etc/a\"", "/etc/a") + open_line(11, "\"/etc/a\"", "/etc/a") +
                open_line(12, "\"/etc/b\"", "/etc/b") + open_line(13, "\"/etc/a\"", "/etc/a"));
    ASSERT_TRUE(o.complete) << o.reason;
    ASSERT_EQ(o.events.size(), 2U);
    EXPECT_EQ(o.events[0].path_asked, "/etc/a");
    EXPECT_EQ(o.events[0].pid, 10);
    EXPECT_EQ(o.counts[0], 3U);
    EXPECT_EQ(o.events[1].path_asked, "/etc/b");
    EXPECT_EQ(o.counts[1], 1U);
}

TEST_F(Collect, TheSamePathAskedThatResolvedElsewhereIsAnotherEvent) {
    // A link swapped between two opens: the second open reached another file.
    const auto o = collect(open_line(10, "\"/w/link\"", "/w/file") +
                           open_line(10, "\"/w/link\"", "/home/secret"));
    ASSERT_EQ(o.events.size(), 2U);
    EXPECT_EQ(o.events[0].path_resolved, "/w/file");
    EXPECT_EQ(o.events[1].path_resolved, "/home/secret");
}

TEST_F(Collect, NamesThatSpellTheOtherFieldsStayApart) {
    // Joined without escaping, "/w/a\",\"resolved\":\"/w/b" asked and resolving to itself
    // could read as the event that asked /w/a and resolved to /w/b. JSON escaping keeps them two.
    const std::string tricky = R"(/w/a","resolved":"/w/b)";
    const auto o = collect(open_line(10, R"("/w/a\",\"resolved\":\"/w/b")", tricky) +
                           open_line(10, "\"/w/a\"", "/w/b"));
    ASSERT_EQ(o.events.size(), 2U) << "merged: " << o.events[0].path_asked;
    EXPECT_EQ(o.events[0].path_asked, tricky);
    EXPECT_EQ(o.events[1].path_asked, "/w/a");
    EXPECT_EQ(o.events[1].path_resolved, "/w/b");
}

TEST_F(Collect, ARefusedAndASuccessfulOpenOfOnePathAreTwoEvents) {
    const auto o =
        collect("10 openat(AT_FDCWD</w>, \"/etc/c\", O_RDONLY) = -1 EACCES (Permission denied)\n" +
                open_line(10, "\"/etc/c\"", "/etc/c"));
    ASSERT_EQ(o.events.size(), 2U);
    EXPECT_FALSE(o.events[0].success);
    EXPECT_EQ(o.events[0].error, "EACCES");
    EXPECT_TRUE(o.events[1].success);
}

TEST_F(Collect, DistinctEventsBeyondTheCapMakeTheAuditIncomplete) {
    const auto o =
        collect(open_line(10, "\"/etc/a\"", "/etc/a") + open_line(10, "\"/etc/b\"", "/etc/b") +
                    open_line(10, "\"/etc/a\"", "/etc/a") + open_line(10, "\"/etc/c\"", "/etc/c"),
                R"({"max_distinct_events": 2})");
    EXPECT_FALSE(o.complete);
    EXPECT_NE(o.reason.find("1 accesses beyond 2 distinct"), std::string::npos) << o.reason;
    ASSERT_EQ(o.events.size(), 2U);
    EXPECT_EQ(o.counts[0], 2U);  // a repeat of a kept event is still counted
}

TEST_F(Collect, TenThousandDistinctOpensAreEachKept) {
    std::string trace;
    for (int i = 0; i < 10000; ++i) {
        const auto p = "/data/f" + std::to_string(i);
        trace += open_line(100 + (i % 7), "\"" + p + "\"", p);
    }
    trace += open_line(100, "\"/data/f9999\"", "/data/f9999");
    const auto o = collect(trace);
    ASSERT_TRUE(o.complete) << o.reason;
    ASSERT_EQ(o.events.size(), 10000U);
    EXPECT_EQ(o.events[9999].path_asked, "/data/f9999");
    EXPECT_EQ(o.counts[9999], 2U);
    EXPECT_EQ(o.counts[0], 1U);
}

// The trace of a won descriptor swap, as strace writes it: a thread of a process whose threads
// share one descriptor table opened the key, and a sibling replaced the descriptor with one of a
// granted file before strace read its path. The judge must still list the key; the same open by a
// process alone in its table cannot have been swapped and is judged by the descriptor.
TEST_F(Collect, AnOpenWhoseDescriptorASiblingCouldSwapIsJudgedByTheAskedPathToo) {
    const std::string thread =
        "10 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|"
        "CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, child_tid=0x1, "
        "parent_tid=0x1, exit_signal=0, stack=0x1, stack_size=0x7fff80, tls=0x1} => "
        "{parent_tid=[11]}, 88) = 11\n";
    auto grants = audit::default_os_grants();
    grants.workspace_like = {"/w"};
    const auto swapped = collect(thread + open_line(10, "\"/srv/key\"", "/w/notes"));
    ASSERT_TRUE(swapped.complete) << swapped.reason;
    const auto judged = audit::judge_observation(swapped, grants, "strace");
    ASSERT_EQ(judged.findings.size(), 1U);
    EXPECT_EQ(judged.findings[0].path, "/srv/key");

    // Control: alone in its table, the open is judged by its descriptor.
    const auto alone = collect(open_line(10, "\"/srv/key\"", "/w/notes"));
    EXPECT_TRUE(audit::judge_observation(alone, grants, "strace").findings.empty());
}

}  // namespace
}  // namespace tea::plugins
