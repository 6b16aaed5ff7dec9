// Who in an evaluation asks a login adapter (evaluation/login_asks.hpp): each entry for its
// target, the rubric judge and each sealed-brief agent for itself, under names no two share, and
// only the entries' asks marked as a target's (the only grants a backend must show).
#include "evaluation/login_asks.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace tea::evaluation {
namespace {

namespace fs = std::filesystem;

class LoginAsksTest : public ::testing::Test {
   protected:
    void SetUp() override {
        fs::create_directories(eval_ / "probes");
        put(project_ / "tool.sh", "#!/bin/sh\n");
        fs::permissions(project_ / "tool.sh", fs::perms{0755});
        put(eval_ / "rubric.md", "# Rubric\n\n## kind\nIs kind.\n");
        put(eval_ / "brief.md", "You want a refund.\n");
        put(eval_ / "evaluation.json", R"({"confinement": false,
            "registry": [{"interfaceId": "tool", "executable": "tool", "target": "tool.sh",
                          "maxElapsedMs": 1000, "login": "claude"}],
            "evaluator": {"kind": "rubric", "rubric": "rubric.md", "agent": "claude", "program": "sh",
                          "model": "m", "login": "claude"}})");
        put(eval_ / "probes" / "00-chat.json",
            R"({"entry": "tool", "conversation": {"brief": "brief.md",
                "agent": {"program": "/bin/sh", "model": "m", "login": "codex",
                          "environmentKeys": ["ANTHROPIC_BASE_URL"]}}})");
        put(eval_ / "probes" / "01-plain.json", R"({"entry": "tool"})");
    }
    static void put(const fs::path &path, const std::string &content) {
        std::ofstream{path, std::ios::binary} << content;
    }
    Loaded loaded() const {
        auto l = load(eval_);
        EXPECT_TRUE(l.problems.empty()) << (l.problems.empty() ? "" : to_string(l.problems[0]));
        return l;
    }

    test::TempDir tmp_{"tea-login-asks"};
    fs::path project_ = fs::canonical(tmp_.path());
    fs::path eval_ = project_ / ".tea";
};

TEST_F(LoginAsksTest, EachAgentAsksForAGrantOfItsOwnAndOnlyTheEntrysIsATargets) {
    const auto l = loaded();
    const auto uses = login_uses(l.evaluation);
    ASSERT_EQ(uses.size(), 3U);
    EXPECT_EQ(uses[0].ask.entry, "tool");
    EXPECT_TRUE(uses[0].target);
    EXPECT_EQ(uses[0].where, "entry 'tool' field 'login'");

    EXPECT_EQ(uses[1].ask.entry, "rubric judge");
    EXPECT_EQ(uses[1].ask.login, "claude");
    EXPECT_FALSE(uses[1].target) << "the judge's files go to its own home";
    EXPECT_EQ(uses[1].file, eval_ / "evaluation.json");
    EXPECT_EQ(uses[1].where, "evaluator field 'login'");

    EXPECT_EQ(uses[2].ask.entry, "sealed brief 00-chat") << "never the target's entry";
    EXPECT_EQ(uses[2].ask.login, "codex");
    EXPECT_EQ(uses[2].ask.executable, fs::canonical("/bin/sh").string()) << "the CLI that runs";
    EXPECT_EQ(uses[2].ask.environment_keys, std::vector<std::string>{"ANTHROPIC_BASE_URL"});
    EXPECT_FALSE(uses[2].target) << "the agent's files go to its own home";
    EXPECT_EQ(uses[2].file, eval_ / "probes" / "00-chat.json");
    EXPECT_EQ(uses[2].where, "probe '00-chat' field 'conversation.agent.login'");
}

// With no plugin installed, every ask is a problem naming its file and field; the control, an
// evaluation that names no login, has none.
TEST_F(LoginAsksTest, AnAdapterNotInstalledIsAProblemNamingTheFileAndField) {
    const auto none = plugins::Registry::discover({tmp_.path() / "no-plugins"}, tmp_.path());
    const auto l = loaded();
    std::vector<Problem> problems;
    report_uninstalled_login_adapters(l.evaluation, none, problems);
    ASSERT_EQ(problems.size(), 3U);
    EXPECT_EQ(problems[2].file, eval_ / "probes" / "00-chat.json");
    EXPECT_EQ(problems[2].where, "probe '00-chat' field 'conversation.agent.login'");
    EXPECT_NE(problems[2].message.find("codex"), std::string::npos) << problems[2].message;

    put(eval_ / "evaluation.json", R"({"confinement": false,
        "registry": [{"interfaceId": "tool", "executable": "tool", "target": "tool.sh",
                      "maxElapsedMs": 1000}],
        "evaluator": {"kind": "rubric", "rubric": "rubric.md", "agent": "claude", "program": "sh", "model": "m"}})");
    put(eval_ / "probes" / "00-chat.json",
        R"({"entry": "tool", "conversation": {"brief": "brief.md",
            "agent": {"program": "/bin/sh", "model": "m"}}})");
    const auto without = loaded();
    EXPECT_TRUE(login_uses(without.evaluation).empty());
    problems.clear();
    report_uninstalled_login_adapters(without.evaluation, none, problems);
    EXPECT_TRUE(problems.empty());
}

}  // namespace
}  // namespace tea::evaluation
