// tea-skill-runner with the real Claude Code CLI against the Messages API mock: the runner alone
// (the CLI unconfined, through the mock's own proxy), and a skill target of `tea-evaluate run`
// (examples/agent-skill: confined, audited, logged in through the claude adapter).
//
// What the pinned CLI does with no login and with a token the API refuses (a 401 from the mock's
// "acceptedCredentials") is what the runner's exit 4 is read from (docs/agent-evaluations.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "claude_cli.hpp"
#include "evaluation_project.hpp"
#include "harness.hpp"
#include "messages_api_mock.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::test::clients {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource{TEA_SOURCE_DIR};
const fs::path kExample = kSource / "examples" / "agent-skill";
constexpr const char *kMockHost = "api.mock.test";
constexpr const char *kNotes = "RELEASE_NOTES.md";

// The scripted session of the example's skill: the notes written, then a last word.
json notes_turns() {
    return json::array({
        json::array(
            {{{"type", "tool_use"},
              {"name", "Write"},
              {"input",
               {{"file_path", kNotes},
                {"content", read_file((kExample / ".tea/evaluator/expected.md").string())}}}}}),
        json::array({{{"type", "text"}, {"text", "The release notes are written."}}}),
    });
}

class SkillRunnerClient : public ::testing::Test {
   protected:
    void SetUp() override {
        ASSERT_TRUE(fs::is_regular_file(TEA_TEST_CLAUDE))
            << TEA_TEST_CLAUDE << " is missing: scripts/install-deps.sh installs it";
        for (const auto &dir : {workspace(), home(), tmp(), base() / "mock"}) {
            fs::create_directories(dir);
        }
        write_file((workspace() / "prompt.txt").string(), "Write the release notes.");
    }

    [[nodiscard]] const fs::path &base() const { return dir_.path(); }
    [[nodiscard]] fs::path workspace() const { return base() / "workspace"; }
    [[nodiscard]] fs::path home() const { return base() / "home"; }
    [[nodiscard]] fs::path tmp() const { return base() / "tmp"; }

    MessagesApiMock &start_mock(const json &turns, const json &fields = json::object()) {
        return mock_.emplace(base() / "mock", kMockHost, turns, json::array(), fields);
    }

    // The runner in the workspace, the CLI pointed at the mock through the mock's proxy, with
    // `extra` variables (a login) and a variable of the caller's the agent must not see.
    Outcome runner(const std::vector<std::string> &extra,
                   const std::vector<std::string> &options = {"--max-turns", "5"}) {
        std::vector<std::string> env{"PATH=/usr/bin:/bin",
                                     "HOME=" + home().string(),
                                     "TMPDIR=" + tmp().string(),
                                     "ANTHROPIC_BASE_URL=" + mock_->base_url(),
                                     "HTTPS_PROXY=" + mock_->proxy_url(),
                                     "NODE_EXTRA_CA_CERTS=" + mock_->ca_file().string(),
                                     "EVALUATION_SECRET=kept-from-the-agent"};
        const auto &quiet = claude_test_environment();
        env.insert(env.end(), quiet.begin(), quiet.end());
        env.insert(env.end(), extra.begin(), extra.end());
        std::vector<std::string> argv{"/bin/sh",
                                      "-c",
                                      "cd \"$0\" && exec \"$@\"",
                                      workspace().string(),
                                      TEA_SKILL_RUNNER_BIN,
                                      "--agent",
                                      "claude",
                                      "--agent-bin",
                                      TEA_TEST_CLAUDE,
                                      "--skill",
                                      (kExample / "skills" / "release-notes").string(),
                                      "--prompt-file",
                                      "prompt.txt"};
        argv.insert(argv.end(), options.begin(), options.end());
        argv.insert(argv.end(), {"--", "--allowedTools", "Write"});
        return run(argv, env);
    }

    [[nodiscard]] std::string transcript() const {
        return read_file((workspace() / "transcript.jsonl").string());
    }

    TempDir dir_{"tea-skill-client", fs::perms::owner_all | fs::perms::group_read |
                                         fs::perms::group_exec | fs::perms::others_read |
                                         fs::perms::others_exec};
    std::optional<MessagesApiMock> mock_;
};

TEST_F(SkillRunnerClient, ASkillSessionWritesItsFileAndTheTranscriptHoldsTheStream) {
    start_mock(notes_turns());
    const auto out = runner({"CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-skill"});
    ASSERT_EQ(out.status, 0) << out.err << transcript();
    EXPECT_EQ(read_file((workspace() / kNotes).string()),
              read_file((kExample / ".tea/evaluator/expected.md").string()));
    // The skill was installed where the CLI looks: it lists it, and tells the model of it.
    EXPECT_TRUE(fs::is_regular_file(home() / ".claude/skills/release-notes/SKILL.md"));
    std::istringstream lines{transcript()};
    std::vector<json> stream;
    for (std::string line; std::getline(lines, line);) {
        stream.push_back(json::parse(line));  // every line JSON
    }
    ASSERT_GE(stream.size(), 3U);
    EXPECT_EQ(stream.front().value("subtype", ""), "init");
    const auto skills = stream.front().value("skills", json::array());
    EXPECT_NE(std::find(skills.begin(), skills.end(), "release-notes"), skills.end()) << skills;
    EXPECT_EQ(stream.back().value("type", ""), "result");
    EXPECT_EQ(claude_result(transcript()), "The release notes are written.");
    const auto requests = mock_->requests();
    ASSERT_FALSE(requests.empty());
    EXPECT_NE(requests.front().at("body").dump().find("release-notes: Writes RELEASE_NOTES.md"),
              std::string::npos);
    // The caller's other variable never reached the agent (nor, so, the model).
    for (const auto &q : requests) {
        EXPECT_EQ(q.dump().find("kept-from-the-agent"), std::string::npos);
    }
}

TEST_F(SkillRunnerClient, NoLoginExits4) {
    start_mock(notes_turns());
    const auto out = runner({});
    EXPECT_EQ(out.status, 4) << out.err << transcript();
    EXPECT_NE(out.err.find("could not authenticate: Not logged in"), std::string::npos) << out.err;
    EXPECT_TRUE(mock_->requests().empty());
    EXPECT_FALSE(fs::exists(workspace() / kNotes));
}

TEST_F(SkillRunnerClient, ATokenTheApiRefusesExits4AndOneItTakesRuns) {
    start_mock(notes_turns(), {{"acceptedCredentials", {"Bearer sk-ant-oat01-good"}}});
    const auto refused = runner({"CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-revoked"});
    EXPECT_EQ(refused.status, 4) << refused.err << transcript();
    EXPECT_NE(refused.err.find("401"), std::string::npos) << refused.err;
    EXPECT_FALSE(fs::exists(workspace() / kNotes));
    // Control: the token the mock takes, same session.
    const auto taken = runner({"CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-good"});
    EXPECT_EQ(taken.status, 0) << taken.err << transcript();
    EXPECT_TRUE(fs::exists(workspace() / kNotes));
}

TEST_F(SkillRunnerClient, TheCliStoppedByItsTurnBudgetExits6) {
    start_mock(notes_turns());
    const auto out = runner({"CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-skill"}, {"--max-turns", "1"});
    EXPECT_EQ(out.status, 6) << out.err << transcript();
    EXPECT_NE(transcript().find("error_max_turns"), std::string::npos);
}

// `tea-evaluate run` and `score` of examples/agent-skill, with this test's mock port, CLI and
// authority written in (as tests/clients/claude_evaluation_test.cpp does for claude-agent).
class SkillTargetEvaluation : public SkillRunnerClient {
   protected:
    [[nodiscard]] fs::path project() const { return base() / "project"; }
    [[nodiscard]] fs::path eval() const { return project() / ".tea"; }

    // The example's copy pointed at this test's mock. Its rubric judge is replaced by a command
    // evaluator comparing the notes with the expected ones: these tests are of the skill target
    // (tests/clients/claude_judge_test.cpp tests the judge, and the example's script both).
    void prepare(const std::function<void(json &)> &change = {}) {
        fs::create_directories(project());
        fs::copy(kExample, project(), fs::copy_options::recursive);
        std::error_code ec;
        fs::remove_all(eval() / "runs", ec);
        const auto grader = eval() / "evaluator/grade.sh";
        write_file(grader.string(),
                   "#!/bin/sh\n"
                   "if cmp -s \"$TEA_TRIAL_DIR/artifacts/notes-skill/notes\" "
                   "\"$TEA_EVALUATION_DIR/evaluator/expected.md\" && "
                   "[ -s \"$TEA_TRIAL_DIR/artifacts/notes-skill/transcript\" ]; then\n"
                   "  echo '{\"verdict\": \"pass\"}'\n"
                   "else\n"
                   "  echo '{\"verdict\": \"fail\", \"reasons\": [\"notes or transcript\"]}'\n"
                   "fi\n");
        fs::permissions(grader,
                        fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                        fs::perm_options::add);
        const auto with_grader = [&change](json &evaluation) {
            evaluation["evaluator"] = {{"command", json::array({"evaluator/grade.sh"})}};
            if (change) change(evaluation);
        };
        point_example_at_mock(eval(), "session", *mock_, TEA_TEST_CLAUDE, with_grader,
                              [](json &probe) {
                                  auto &args = probe["args"];
                                  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
                                      if (args[i] == "--agent-bin") args[i + 1] = TEA_TEST_CLAUDE;
                                  }
                              });
        commit_project(project(), "agent-skill");
    }

    [[nodiscard]] std::vector<std::string> environment(
        const std::vector<std::string> &extra) const {
        return evaluation_environment(base(), home(), *mock_, extra);
    }

    static Outcome tea(const std::vector<std::string> &env, std::vector<std::string> args) {
        args.insert(args.begin(), TEA_EVALUATE_BIN);
        return run(args, env);
    }

    // run.json, with its skill object, against docs/schema/run.schema.json.
    static void expect_run_record_valid(const fs::path &run_dir) {
        const auto o = run(
            {"/usr/bin/python3", "-c",
             "import json,sys,jsonschema\n"
             "jsonschema.validate(json.load(open(sys.argv[1])), "
             "json.load(open(sys.argv[2])))\n",
             (run_dir / "run.json").string(), (kSource / "docs/schema/run.schema.json").string()},
            environment_with({}));
        EXPECT_EQ(o.status, 0) << o.err;
    }
};

TEST_F(SkillTargetEvaluation, ALoggedInSkillRunPassesWithItsTranscriptAsAnArtifact) {
    start_mock(notes_turns());
    prepare();
    const std::string token = "sk-ant-oat01-" + bwrap::random_token(32);
    const auto env = environment({"CLAUDE_CODE_OAUTH_TOKEN=" + token});
    const auto check = tea(env, {"check", eval().string()});
    ASSERT_EQ(check.status, 0) << check.err;
    const auto r = tea(env, {"--json", "run", eval().string()});
    const auto dir = run_dir_of(r);
    ASSERT_FALSE(dir.empty()) << r.status << "\n" << r.out << r.err;
    EXPECT_EQ(r.status, 0) << r.err;
    const auto score = tea(env, {"score", dir.string()});
    EXPECT_EQ(score.status, 0) << score.err;
    const auto record = read_json(dir / "run.json");
    const auto &trial = record["trials"][0];
    EXPECT_EQ(trial["verdict"]["verdict"], "pass") << trial["verdict"];
    EXPECT_TRUE(trial["observedMounts"].empty()) << trial["observedMounts"];
    const auto &call = trial["calls"][0];
    EXPECT_EQ(call["exitCode"], 0);
    EXPECT_EQ(call["skill"]["folder"], "skills/release-notes") << call;
    EXPECT_EQ(call["skill"]["runnerExit"], "done") << call;
    expect_run_record_valid(dir);
    const auto transcript = read_file((dir / "trials/1/artifacts/notes-skill/transcript").string());
    EXPECT_NE(transcript.find("\"subtype\":\"init\""), std::string::npos) << transcript;
    // The login's token reached the mock and no record.
    for (const auto &q : mock_->requests()) {
        EXPECT_EQ(q.at("headers").value("authorization", ""), "Bearer " + token);
    }
    for (const auto &e : fs::recursive_directory_iterator(dir)) {
        if (e.is_regular_file()) {
            EXPECT_EQ(read_file(e.path().string()).find(token), std::string::npos) << e.path();
        }
    }
}

TEST_F(SkillTargetEvaluation, AMissingLoginIsAnInfrastructureErrorNotAFail) {
    start_mock(notes_turns());
    // No login declared and none in the environment: the CLI finds none and the runner exits 4.
    prepare([](json &evaluation) { evaluation["registry"][0].erase("login"); });
    const auto env = environment({});
    const auto r = tea(env, {"--json", "run", eval().string()});
    const auto dir = run_dir_of(r);
    ASSERT_FALSE(dir.empty()) << r.status << "\n" << r.out << r.err;
    const auto score = tea(env, {"score", dir.string()});
    EXPECT_EQ(score.status, 3) << score.out << score.err;
    const auto record = read_json(dir / "run.json");
    const auto &call = record["trials"][0]["calls"][0];
    EXPECT_EQ(call["exitCode"], 4) << call;
    EXPECT_EQ(call["infrastructureError"], true) << call;
    EXPECT_EQ(call["skill"]["runnerExit"], "the agent could not authenticate") << call;
    EXPECT_EQ(record["trials"][0]["infrastructureErrors"], 1);
    expect_run_record_valid(dir);
    EXPECT_TRUE(mock_->requests().empty());
}

TEST_F(SkillTargetEvaluation, CheckRefusesASkillFolderWithALinkOut) {
    start_mock(notes_turns());
    prepare();
    fs::create_symlink("/etc/passwd", project() / "skills/release-notes/passwd");
    const auto check = tea(environment({}), {"check", eval().string()});
    EXPECT_EQ(check.status, 2);
    EXPECT_NE(check.err.find("evaluation.json"), std::string::npos) << check.err;
    EXPECT_NE(check.err.find("'target'"), std::string::npos) << check.err;
    EXPECT_NE(check.err.find("holds a link at passwd"), std::string::npos) << check.err;
}

TEST_F(SkillTargetEvaluation, TheExampleScriptHoldsWhatItSays) {
    const auto out = run({"/bin/bash", (kSource / "scripts/run-agent-skill-example.sh").string(),
                          (base() / "example").string()},
                         environment_with({"TEA_EVALUATE_BIN=" + std::string{TEA_EVALUATE_BIN}}));
    EXPECT_EQ(out.status, 0) << out.out << out.err;
    EXPECT_NE(out.out.find("ok: score exits 0 (pass)"), std::string::npos) << out.out;
    EXPECT_EQ(out.err.find("NOT AS EXPECTED"), std::string::npos) << out.err;
}

}  // namespace
}  // namespace tea::test::clients
