// tea-evaluate check as a user runs it: exit 0 with a summary, or exit 2 with a line a problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <tuple>

#include "support/process.hpp"

namespace tea {
namespace {

namespace fs = std::filesystem;

// A project holding one evaluation folder, .tea; the test writes evaluation.json.
class CheckCli : public ::testing::Test {
   protected:
    void SetUp() override {
        project_ = test::make_temp_dir("tea-check-cli");
        eval_ = project_ + "/.tea";
        fs::create_directories(eval_ + "/probes");
        test::write_file(project_ + "/tool.sh", "#!/bin/sh\n");
        test::write_file(eval_ + "/grade.sh", "#!/bin/sh\n");
        fs::permissions(project_ + "/tool.sh", fs::perms{0755});
        fs::permissions(eval_ + "/grade.sh", fs::perms{0755});
        test::write_file(eval_ + "/probes/first.json", R"({"entry": "tool", "args": ["run"]})");
    }
    void TearDown() override { fs::remove_all(project_); }

    void evaluation(const std::string &egress_host) const {
        test::write_file(eval_ + "/evaluation.json", R"({"trials": 2, "confinement": false,
            "registry": [{"interfaceId": "tool", "executable": "tool", "target": "tool.sh",
                          "maxElapsedMs": 1000,
                          "egress": [{"host": ")" + egress_host +
                                                         R"(", "port": 443}]}],
            "evaluator": {"command": ["grade.sh"]}})");
    }
    test::Outcome check(std::initializer_list<std::string> extra = {}) const {
        std::vector<std::string> argv{TEA_EVALUATE_BIN};
        argv.insert(argv.end(), extra);
        argv.insert(argv.end(), {"check", eval_});
        // No configuration and no plugin directory of the developer's may count.
        return test::run(argv, test::environment_with({"XDG_CONFIG_HOME=/nonexistent-tea-test",
                                                       "HOME=/nonexistent-tea-test"}));
    }

    static test::Outcome check_dir(const std::string &dir) {
        return test::run({TEA_EVALUATE_BIN, "check", dir},
                         test::environment_with({"XDG_CONFIG_HOME=/nonexistent-tea-test",
                                                 "HOME=/nonexistent-tea-test"}));
    }

    std::string project_;
    std::string eval_;
};

TEST_F(CheckCli, GoodEvaluationExitsZeroWithASummary) {
    evaluation("api.example.com");
    const auto o = check();
    EXPECT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(o.out, "ok: 1 entries, 1 probes, 2 trials, confinement off\n");
    EXPECT_EQ(o.err, "");
    const auto j = check({"--json"});
    EXPECT_EQ(j.status, 0) << j.err;
    const auto doc = nlohmann::json::parse(j.out);
    EXPECT_EQ(doc["ok"], true);
    EXPECT_TRUE(doc["problems"].empty());
}

// A login names an installed adapter: one that is not is refused by check, with the closest name.
TEST_F(CheckCli, AnUnknownLoginAdapterExitsTwoNamingIt) {
    for (const auto &[login, status, said] :
         {std::tuple{std::string{"claude"}, 0, std::string{"ok: 1 entries"}},
          std::tuple{std::string{"codex"}, 0, std::string{"ok: 1 entries"}},
          std::tuple{std::string{"claud"}, 2, std::string{"did you mean 'claude'"}},
          std::tuple{std::string{"github"}, 2, std::string{"no login plugin named 'github'"}},
          std::tuple{std::string{"bubblewrap"}, 2, std::string{"not a login plugin"}}}) {
        test::write_file(eval_ + "/evaluation.json", R"({"confinement": false,
            "registry": [{"interfaceId": "tool", "executable": "tool", "target": "tool.sh",
                          "maxElapsedMs": 1000, "login": ")" +
                                                         login + R"("}],
            "evaluator": {"command": ["grade.sh"]}})");
        const auto o = check();
        EXPECT_EQ(o.status, status) << login << "\n" << o.err;
        EXPECT_NE((o.out + o.err).find(said), std::string::npos) << login << "\n" << o.err;
        if (status != 0) {
            EXPECT_NE(o.err.find("entry 'tool' field 'login'"), std::string::npos) << o.err;
        }
    }
}

// The evaluation layer's agents name login adapters too, the rubric judge in `login`, a
// sealed-brief agent in its probe's `conversation.agent.login`: an adapter that is not installed
// is refused by check with the file and field that named it, and an installed one passes.
TEST_F(CheckCli, AnAgentsUnknownLoginAdapterExitsTwoNamingTheFileAndField) {
    test::write_file(eval_ + "/rubric.md", "# Rubric\n\n## kind\nIs kind.\n");
    test::write_file(eval_ + "/brief.md", "You want a refund.\n");
    const auto canonical = fs::canonical(eval_).string();
    const std::string judge_where = canonical + "/evaluation.json: evaluator field 'login': ";
    const std::string agent_where =
        canonical + "/probes/first.json: probe 'first' field 'conversation.agent.login': ";
    for (const auto &[judge, agent, status, where, said] :
         {std::tuple{"claude", "claude", 0, "", "ok: 1 entries"},
          std::tuple{"claud", "claude", 2, judge_where.c_str(), "did you mean 'claude'"},
          std::tuple{"claude", "github", 2, agent_where.c_str(), "no login plugin named 'github'"},
          std::tuple{"claude", "bubblewrap", 2, agent_where.c_str(), "not a login plugin"}}) {
        test::write_file(eval_ + "/evaluation.json", R"({"confinement": false,
            "registry": [{"interfaceId": "tool", "executable": "tool", "target": "tool.sh",
                          "maxElapsedMs": 1000}],
            "evaluator": {"kind": "rubric", "rubric": "rubric.md", "agent": "claude", "program": "sh",
                          "model": "m", "login": ")" + std::string{judge} +
                                                         R"("}})");
        test::write_file(eval_ + "/probes/first.json",
                         R"({"entry": "tool", "conversation": {"brief": "brief.md",
                             "agent": {"program": "/bin/sh", "model": "m", "login": ")" +
                             std::string{agent} + R"("}}})");
        const auto o = check();
        EXPECT_EQ(o.status, status) << judge << " " << agent << "\n" << o.err;
        EXPECT_NE((o.out + o.err).find(said), std::string::npos) << agent << "\n" << o.err;
        if (status != 0) {
            EXPECT_NE(o.err.find(std::string{where}), std::string::npos) << o.err;
        }
    }
}

TEST_F(CheckCli, BadEvaluationExitsTwoNamingEveryProblem) {
    evaluation("*.Example.com");
    test::write_file(eval_ + "/probes/second.json", "{\"entry\": \"tool\",\n  \"args\" [] }");
    const auto o = check();
    EXPECT_EQ(o.status, 2);
    EXPECT_EQ(o.out, "");
    const auto canonical = fs::canonical(eval_).string();
    EXPECT_NE(o.err.find(canonical +
                         "/evaluation.json: entry 'tool' field 'egress[0].host': '*.Example.com' "
                         "holds a wildcard"),
              std::string::npos)
        << o.err;
    EXPECT_NE(o.err.find(canonical + "/probes/second.json:2:10: "), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("tea-evaluate: check: 2 problem(s) in " + eval_ + "\n"), std::string::npos)
        << o.err;

    const auto j = check({"--json"});
    EXPECT_EQ(j.status, 2);
    const auto doc = nlohmann::json::parse(j.out);
    EXPECT_EQ(doc["ok"], false);
    ASSERT_EQ(doc["problems"].size(), 2U) << j.out;
    const auto &host = doc["problems"][0];
    EXPECT_EQ(host["file"], canonical + "/evaluation.json");
    EXPECT_EQ(host["where"], "entry 'tool' field 'egress[0].host'");
    EXPECT_EQ(host["line"], 0);
    const auto &syntax = doc["problems"][1];
    EXPECT_EQ(syntax["file"], canonical + "/probes/second.json");
    EXPECT_EQ(syntax["line"], 2);
    EXPECT_EQ(syntax["column"], 10);
}

// A target without its execute bit, and an evaluator without an interpreter line: check passed
// both, and every call of the run then failed with 126, recorded against the target.
TEST_F(CheckCli, ProgramsTheKernelCannotExecuteAreProblemsNamingEntryFieldAndFile) {
    evaluation("api.example.com");
    fs::permissions(project_ + "/tool.sh", fs::perms{0644});
    test::write_file(eval_ + "/grade.sh", "echo '{\"verdict\": \"pass\"}'\n");
    const auto o = check();
    EXPECT_EQ(o.status, 2) << o.err;
    const auto canonical = fs::canonical(eval_).string();
    EXPECT_NE(o.err.find(canonical + "/evaluation.json: entry 'tool' field 'target': 'tool.sh' (" +
                         fs::canonical(project_ + "/tool.sh").string() +
                         ") is not executable (mode 0644)"),
              std::string::npos)
        << o.err;
    EXPECT_NE(
        o.err.find(canonical + "/evaluation.json: evaluator field 'command[0]': 'grade.sh' (" +
                   canonical +
                   "/grade.sh) has neither an interpreter line (#!) nor an ELF "
                   "header"),
        std::string::npos)
        << o.err;
    EXPECT_NE(o.err.find("tea-evaluate: check: 2 problem(s)"), std::string::npos) << o.err;

    // The control: the same evaluation once both can be executed.
    fs::permissions(project_ + "/tool.sh", fs::perms{0755});
    test::write_file(eval_ + "/grade.sh", "#!/bin/sh\necho '{\"verdict\": \"pass\"}'\n");
    const auto fixed = check();
    EXPECT_EQ(fixed.status, 0) << fixed.err;
}

TEST_F(CheckCli, HostileInputCannotForgeLines) {
    evaluation(R"(a\nfake.json: ok\u0007)");
    const auto o = check();
    EXPECT_EQ(o.status, 2);
    EXPECT_EQ(o.err.find("\nfake.json"), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("a\\x0afake.json: ok\\x07"), std::string::npos) << o.err;
}

TEST_F(CheckCli, MissingFolderAndMissingArgument) {
    const auto o = test::run({TEA_EVALUATE_BIN, "check", project_ + "/nowhere"}, {});
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find("the evaluation folder " + project_ + "/nowhere does not exist"),
              std::string::npos)
        << o.err;
    const auto file = test::run({TEA_EVALUATE_BIN, "check", project_ + "/tool.sh"}, {});
    EXPECT_EQ(file.status, 2);
    EXPECT_NE(file.err.find("the evaluation folder " + project_ + "/tool.sh is not a directory"),
              std::string::npos)
        << file.err;
    EXPECT_EQ(test::run({TEA_EVALUATE_BIN, "check"}, {}).status, 2);
}

TEST_F(CheckCli, TheProjectGivenForItsEvaluationFolderNamesTheFolder) {
    evaluation("api.example.com");
    const auto o = check_dir(project_);
    EXPECT_EQ(o.status, 2);
    const auto canonical = fs::canonical(project_).string();
    EXPECT_EQ(o.err, canonical +
                         "/evaluation.json: does not exist; the evaluation folder here is " +
                         canonical + "/.tea (check that folder)\ntea-evaluate: check: 1 " +
                         "problem(s) in " + project_ + "\n");
    // A folder with no evaluation at all says what EVAL_DIR must hold.
    const auto empty = check_dir(eval_ + "/probes");
    EXPECT_EQ(empty.status, 2);
    EXPECT_NE(empty.err.find("/probes/evaluation.json: does not exist; EVAL_DIR is the folder that "
                             "holds evaluation.json"),
              std::string::npos)
        << empty.err;
    // The control: the evaluation folder itself passes.
    EXPECT_EQ(check_dir(eval_).status, 0);
}

TEST_F(CheckCli, AnUnknownFieldOrEntryNamesTheOneMeant) {
    test::write_file(eval_ + "/evaluation.json", R"({"trials": 1, "confinement": false,
        "registry": [{"interfaceId": "tool", "executable": "tool", "target": "tool.sh",
                      "maxElapsed": 1000}],
        "evaluator": {"command": ["grade.sh"]}})");
    test::write_file(eval_ + "/probes/first.json", R"({"entry": "tol", "args": ["run"]})");
    const auto o = check();
    EXPECT_EQ(o.status, 2);
    const auto canonical = fs::canonical(eval_).string();
    EXPECT_NE(o.err.find(canonical + "/evaluation.json: entry 'tool' field 'maxElapsed': is "
                                     "unknown: not a field of this format (fields here: "
                                     "interfaceId, kind, executable, target, subcommandPaths, "
                                     "artifacts, environmentKeys, maxElapsedMs, "
                                     "infrastructureExitCodes, systemPaths, egress, login, "
                                     "budgets); did you mean 'maxElapsedMs'?\n"),
              std::string::npos)
        << o.err;
    EXPECT_NE(o.err.find(canonical + "/probes/first.json: probe 'first' field 'entry': 'tol' names "
                                     "no entry of the registry (entries: tool); did you mean "
                                     "'tool'?\n"),
              std::string::npos)
        << o.err;
}

// A contract that lies is refused with its file and field; an unused corpus file is a note that
// does not change the exit code.
TEST_F(CheckCli, LyingContractIsExit2AndAnUnusedCorpusFileANote) {
    evaluation("api.example.com");
    test::write_file(eval_ + "/contract.json", R"({"interfaces": ["tool"], "probes": ["frist"]})");
    const auto lie = check();
    EXPECT_EQ(lie.status, 2) << lie.err;
    EXPECT_NE(lie.err.find("contract.json: field 'probes[0]': probe 'frist' is no probe of"),
              std::string::npos)
        << lie.err;
    EXPECT_NE(lie.err.find("contract.json: field 'probes': omits probe 'first'"), std::string::npos)
        << lie.err;

    test::write_file(eval_ + "/contract.json", R"({"interfaces": ["tool"], "probes": ["first"]})");
    fs::create_directories(eval_ + "/corpus");
    test::write_file(eval_ + "/corpus/spare.txt", "x");
    const auto noted = check();
    EXPECT_EQ(noted.status, 0) << noted.err;
    EXPECT_NE(noted.err.find("note: " + eval_ + "/corpus/spare.txt: is named by no probe"),
              std::string::npos)
        << noted.err;
    const auto j = check({"--json"});
    EXPECT_EQ(j.status, 0) << j.err;
    EXPECT_EQ(nlohmann::json::parse(j.out)["notes"].size(), 1U) << j.out;
}

}  // namespace
}  // namespace tea
