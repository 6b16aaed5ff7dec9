// The rubric judge (evaluator kind "rubric") with the real Claude Code CLI against the Messages
// API mock, through `tea-evaluate run` and `score`. The trial's target is a shell script that
// writes a greeting (the artifact); the judge is the CLI, run by the evaluation layer with no
// tools, its answers scripted in the mock's plainTurns (the answers to requests that offer no
// tool). Each test proves one path of the judge: a pass, a fail, a malformed answer retried in
// the same session, an answer out of range every time (error), a judge that never answers
// (error, nothing left running); and that a confined target cannot read rubric.md, with the
// opted-out control that can.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"
#include "messages_api_mock.hpp"
#include "support/json_schema.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::test::clients {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char *kMockHost = "api.mock.test";
constexpr const char *kGreeting = "Hello, Ada! Welcome back.\n";
constexpr const char *kRubric = R"(# Greeting rubric

The program greets the user the probe names.

## names-the-user (required)
The greeting names Ada.

## polite (weight 2)
The greeting is polite.
)";

json read_json(const fs::path &path) {
    std::ifstream in{path};
    return json::parse(in, nullptr, false);
}

// A judge's scripted answer: each criterion's score, as the text of one plain turn.
json answer(int names, int polite, const std::string &reason = "seen in the greeting") {
    const json doc{{"criteria",
                    {{{"id", "names-the-user"}, {"score", names}, {"reason", reason}},
                     {{"id", "polite"}, {"score", polite}, {"reason", reason}}}}};
    return json::array({{{"type", "text"}, {"text", doc.dump()}}});
}

json text_turn(const std::string &text) {
    return json::array({{{"type", "text"}, {"text", text}}});
}

// The command lines of the processes running now that hold `needle`.
std::vector<std::string> processes_holding(const std::string &needle) {
    std::vector<std::string> found;
    for (const auto &process : test::processes_holding({needle})) {
        found.push_back(std::to_string(process.pid) + ": " + process.command_line);
    }
    return found;
}

class ClaudeJudge : public ::testing::Test {
   protected:
    void SetUp() override {
        ASSERT_TRUE(fs::is_regular_file(TEA_TEST_CLAUDE))
            << TEA_TEST_CLAUDE << " is missing: scripts/install-deps.sh installs it";
        fs::create_directories(project() / "bin");
        fs::create_directories(eval() / "probes");
        fs::create_directories(base() / "home");
        fs::create_directories(base() / "mock");
        // The target: writes the greeting; given a path, copies what it can read of it.
        write_file(
            (project() / "bin" / "greet.sh").string(),
            "#!/bin/sh\nmkdir -p out\nprintf 'Hello, Ada! Welcome back.\\n' > out/greeting.txt\n"
            "if [ -n \"${1:-}\" ]; then cat \"$1\" > out/seen.txt 2>&1 || true; fi\n");
        fs::permissions(project() / "bin" / "greet.sh", fs::perms{0755});
        write_file((eval() / "rubric.md").string(), kRubric);
        write_file((eval() / "probes" / "greet.json").string(),
                   json{{"entry", "greeter"}, {"args", json::array()}}.dump());
        token_ = "sk-ant-oat01-" + bwrap::random_token(32);
        model_ = "claude-judge-" + bwrap::random_token(8);
    }

    [[nodiscard]] const fs::path &base() const { return dir_.path(); }
    [[nodiscard]] fs::path project() const { return base() / "project"; }
    [[nodiscard]] fs::path eval() const { return project() / ".tea"; }

    // The evaluation with the judge, `change` applied, committed.
    void prepare(const json &plain_turns, const std::function<void(json &)> &change = {}) {
        // A fresh mock each time: one left from an earlier prepare would lend its ports and log.
        mock_.reset();
        fs::remove_all(base() / "mock");
        fs::create_directories(base() / "mock");
        mock_.emplace(base() / "mock", kMockHost, json::array(), plain_turns);
        json evaluation{
            {"confinement", true},
            {"trials", 1},
            {"registry",
             {{{"interfaceId", "greeter"},
               {"executable", "greet"},
               {"target", "bin/greet.sh"},
               {"artifacts", {{"greeting", "out/greeting.txt"}, {"seen", "out/seen.txt"}}},
               {"maxElapsedMs", 10000}}}},
            {"evaluator",
             {{"kind", "rubric"},
              {"rubric", "rubric.md"},
              {"agent", "claude"},
              {"program", TEA_TEST_CLAUDE},
              {"model", model_},
              {"login", "claude"},
              {"environmentKeys",
               {"ANTHROPIC_BASE_URL", "NODE_EXTRA_CA_CERTS", "HTTPS_PROXY",
                "CLAUDE_CODE_MAX_RETRIES"}},
              {"retries", 1},
              {"maxScore", 10},
              {"passThreshold", 0.8},
              {"maxElapsedMs", 60000}}}};
        if (change) change(evaluation);
        write_file((eval() / "evaluation.json").string(), evaluation.dump(2));
        for (const std::vector<std::string> &argv :
             {std::vector<std::string>{"git", "init", "-q", project().string()},
              {"git", "-C", project().string(), "add", "-A"},
              {"git", "-C", project().string(), "-c", "user.name=t", "-c", "user.email=t@t",
               "commit", "-q", "-m", "greeter"}}) {
            const auto o = run(argv, environment_with({}));
            ASSERT_EQ(o.status, 0) << argv[1] << ": " << o.err;
        }
    }

    // tea-evaluate's environment: the test's home, configuration and private root; the token the
    // judge's login grants; the mock's address, authority and proxy the judge is given.
    [[nodiscard]] std::vector<std::string> environment() const {
        return environment_with({
            "XDG_CONFIG_HOME=/nonexistent-tea-test",
            "TEA_EVALUATE_PRIVATE_ROOT=" + (base() / "private").string(),
            "HOME=" + (base() / "home").string(),
            "CLAUDE_CONFIG_DIR=",
            "ANTHROPIC_API_KEY=",
            "ANTHROPIC_AUTH_TOKEN=",
            "CLAUDE_CODE_OAUTH_TOKEN=" + token_,
            "ANTHROPIC_BASE_URL=" + mock_->base_url(),
            "NODE_EXTRA_CA_CERTS=" + mock_->ca_file().string(),
            "HTTPS_PROXY=" + mock_->proxy_url(),
            "CLAUDE_CODE_MAX_RETRIES=0",
        });
    }

    struct Ran {
        Outcome run;
        Outcome score;
        fs::path dir;
        json trial;
        json verdict;  // verdict.json
    };

    Ran run_and_score() {
        Ran r;
        r.run = tea({"--json", "run", eval().string()});
        const auto doc = json::parse(r.run.out, nullptr, false);
        if (!doc.is_object() || !doc.contains("runDir")) {
            ADD_FAILURE() << "no run: " << r.run.status << "\n" << r.run.out << r.run.err;
            return r;
        }
        r.dir = doc["runDir"].get<std::string>();
        r.score = tea({"score", r.dir.string()});
        r.trial = read_json(r.dir / "run.json")["trials"][0];
        r.verdict = read_json(r.dir / "trials" / "1" / "verdict.json");
        return r;
    }

    Outcome tea(std::vector<std::string> args) const {
        args.insert(args.begin(), TEA_EVALUATE_BIN);
        return run(args, environment());
    }

    // The requests of the judge: those that offer no tool.
    [[nodiscard]] std::vector<json> judge_requests() const {
        std::vector<json> out;
        for (const auto &q : mock_->requests()) {
            const auto &body = q.at("body");
            if (body.is_object() && (!body.contains("tools") || body["tools"].empty())) {
                out.push_back(q);
            }
        }
        return out;
    }

    // run.json, the judge's verdict in it, matches docs/schema/run.schema.json.
    void expect_run_record_valid(const Ran &r) const {
        const auto schema = fs::path{TEA_SOURCE_DIR} / "docs" / "schema" / "run.schema.json";
        EXPECT_EQ(
            schema_problems({{read_json(r.dir / "run.json"), schema.string()}}, base().string()),
            "");
    }

    // No file of the run holds the token.
    void expect_token_nowhere(const Ran &r) const {
        for (const auto &e : fs::recursive_directory_iterator(r.dir)) {
            if (e.is_regular_file()) {
                EXPECT_EQ(read_file(e.path().string()).find(token_), std::string::npos) << e.path();
            }
        }
        EXPECT_EQ(r.run.err.find(token_), std::string::npos);
        EXPECT_EQ(r.score.err.find(token_), std::string::npos);
    }

    std::string token_;
    std::string model_;
    TempDir dir_{"tea-claude-judge", fs::perms::owner_all | fs::perms::group_read |
                                         fs::perms::group_exec | fs::perms::others_read |
                                         fs::perms::others_exec};
    std::optional<MessagesApiMock> mock_;
};

TEST_F(ClaudeJudge, AJudgeThatScoresTheArtifactWellPassesTheTrial) {
    // The reason echoes the credential the judge sent: the verdict must hold it redacted.
    prepare(json::array({answer(10, 9, "names Ada; sent {{authorization}}")}));
    const auto r = run_and_score();
    ASSERT_FALSE(r.dir.empty());
    EXPECT_EQ(r.run.status, 0) << r.run.err;
    EXPECT_EQ(r.score.status, 0) << r.score.out << r.score.err;
    EXPECT_EQ(r.verdict, r.trial["verdict"]);
    EXPECT_EQ(r.verdict["verdict"], "pass") << r.verdict.dump(2);
    const auto &judge = r.verdict["judge"];
    EXPECT_EQ(judge["model"], model_);
    EXPECT_EQ(judge["program"], TEA_TEST_CLAUDE);
    EXPECT_EQ(judge["rubric"], "rubric.md");
    EXPECT_DOUBLE_EQ(judge["weightedScore"].get<double>(), 28.0 / 30.0);
    ASSERT_EQ(judge["criteria"].size(), 2U);
    EXPECT_EQ(judge["criteria"][0]["id"], "names-the-user");
    EXPECT_EQ(judge["criteria"][0]["required"], true);
    EXPECT_EQ(judge["criteria"][0]["reason"], "names Ada; sent Bearer [redacted]");
    ASSERT_EQ(judge["turns"].size(), 1U);
    EXPECT_EQ(judge["turns"][0]["accepted"], true);
    EXPECT_EQ(judge["turns"][0]["prompt"], "judge/01-prompt.txt");
    EXPECT_EQ(r.verdict["stdout"], "judge/01-answer.json");

    // The prompt recorded is what the judge was sent: the rubric, the artifact, the schema.
    const auto prompt = read_file((r.dir / "trials" / "1" / "judge" / "01-prompt.txt").string());
    EXPECT_NE(prompt.find("The greeting names Ada."), std::string::npos) << prompt;
    EXPECT_NE(prompt.find(kGreeting), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("names-the-user, polite"), std::string::npos) << prompt;
    const auto requests = judge_requests();
    ASSERT_EQ(requests.size(), 1U);
    const auto &body = requests[0]["body"];
    EXPECT_EQ(body["model"], model_);
    EXPECT_NE(body["messages"].dump().find("Welcome back."), std::string::npos);
    EXPECT_NE(body["system"].dump().find("You are the grader of an automated evaluation"),
              std::string::npos);
    EXPECT_EQ(requests[0]["headers"].value("authorization", ""), "Bearer " + token_);
    // run.json records the judge's login grant, by variable name.
    const auto logins = read_json(r.dir / "run.json")["logins"];
    ASSERT_EQ(logins.size(), 1U) << logins;
    EXPECT_EQ(logins[0]["variables"], json::array({"CLAUDE_CODE_OAUTH_TOKEN"}));
    expect_token_nowhere(r);
    expect_run_record_valid(r);
}

TEST_F(ClaudeJudge, AJudgeThatScoresTheArtifactPoorlyFailsTheTrial) {
    // The required criterion short of full: a fail whatever the mean.
    prepare(json::array({answer(6, 10, "only the first name")}));
    const auto r = run_and_score();
    ASSERT_FALSE(r.dir.empty());
    EXPECT_EQ(r.verdict["verdict"], "fail") << r.verdict.dump(2);
    EXPECT_EQ(r.score.status, 1) << r.score.out << r.score.err;
    EXPECT_NE((r.score.out + r.score.err).find("'names-the-user' scored 6/10"), std::string::npos)
        << r.score.out << r.score.err;
    EXPECT_EQ(judge_requests().size(), 1U);
}

TEST_F(ClaudeJudge, AMalformedAnswerIsSentBackOnceInTheSameSessionAndRecordedTwice) {
    prepare(json::array(
        {text_turn("Here are my scores: names-the-user 10, polite 10."), answer(10, 10)}));
    const auto r = run_and_score();
    ASSERT_FALSE(r.dir.empty());
    EXPECT_EQ(r.verdict["verdict"], "pass") << r.verdict.dump(2);
    EXPECT_EQ(r.score.status, 0) << r.score.err;
    const auto &turns = r.verdict["judge"]["turns"];
    ASSERT_EQ(turns.size(), 2U) << turns;
    EXPECT_EQ(turns[0]["accepted"], false);
    EXPECT_NE(turns[0]["problems"][0].get<std::string>().find("not a JSON object"),
              std::string::npos);
    EXPECT_EQ(turns[1]["accepted"], true);
    EXPECT_EQ(turns[0]["sessionId"], turns[1]["sessionId"]);
    for (const char *file :
         {"01-prompt.txt", "01-answer.json", "02-prompt.txt", "02-answer.json"}) {
        EXPECT_TRUE(fs::is_regular_file(r.dir / "trials" / "1" / "judge" / file)) << file;
    }
    EXPECT_NE(read_file((r.dir / "trials/1/judge/01-answer.json").string()).find("Here are my"),
              std::string::npos);
    // The retry continued the conversation: the first answer, then what was wrong with it.
    const auto requests = judge_requests();
    ASSERT_EQ(requests.size(), 2U);
    const auto &messages = requests[1]["body"]["messages"];
    EXPECT_NE(messages.dump().find("Here are my scores"), std::string::npos);
    EXPECT_NE(messages.dump().find("Your answer was not accepted"), std::string::npos);
    expect_run_record_valid(r);
}

TEST_F(ClaudeJudge, AScoreOutOfRangeEveryTimeLeavesTheTrialWithoutAVerdict) {
    prepare(json::array({answer(11, 10), answer(11, 10)}));
    const auto r = run_and_score();
    ASSERT_FALSE(r.dir.empty());
    EXPECT_EQ(r.verdict["verdict"], "error") << r.verdict.dump(2);
    EXPECT_NE(r.verdict["reasons"][0].get<std::string>().find("integer from 0 to 10"),
              std::string::npos);
    EXPECT_EQ(r.verdict["judge"]["turns"].size(), 2U);  // the first and its one retry
    EXPECT_TRUE(r.verdict["judge"]["criteria"].empty());
    EXPECT_EQ(r.score.status, 3) << r.score.out << r.score.err;
    EXPECT_NE(r.score.err.find("the evaluator gave no verdict"), std::string::npos)
        << r.score.out << r.score.err;
    expect_run_record_valid(r);
}

TEST_F(ClaudeJudge, AJudgeThatNeverAnswersIsEndedAndLeavesNothingRunning) {
    const auto never = base() / "never";
    prepare(json::array({json::array({{{"type", "wait"}, {"path", never.string()}}})}),
            [](json &evaluation) { evaluation["evaluator"]["maxElapsedMs"] = 3000; });
    const auto r = run_and_score();
    ASSERT_FALSE(r.dir.empty());
    EXPECT_EQ(r.verdict["verdict"], "error") << r.verdict.dump(2);
    EXPECT_EQ(r.verdict["timedOut"], true);
    EXPECT_NE(r.verdict["reasons"][0].get<std::string>().find("no answer within 3000 ms"),
              std::string::npos);
    EXPECT_EQ(r.verdict["judge"]["turns"].size(), 1U);  // no retry of a silence
    EXPECT_LT(r.verdict["elapsedMs"].get<double>(), 20000);
    EXPECT_EQ(r.score.status, 3);
    // The judge's CLI, named by this test's model, is gone with the run.
    EXPECT_EQ(processes_holding(model_), std::vector<std::string>{});
}

// With `egress` the judge's only way out is a route of its own: the pinned made-up host carries it
// to the mock, the invoker's HTTPS_PROXY (the mock's own proxy, passed by environmentKeys) is
// replaced by the route's and never used, and the judge record lists the host. A judge whose
// egress names another host is refused at the route: the refusal is in its turn's record and the
// trial has no verdict. (The judges above, without egress, are the control: the mock's proxy
// carries them.)
TEST_F(ClaudeJudge, AJudgesEgressIsItsRouteToTheApiAndNothingElse) {
    const auto listing = [&](const std::string &host) {
        return [host, this](json &evaluation) {
            evaluation["evaluator"]["egress"] = json::array(
                {{{"host", host}, {"port", mock_->api_port()}, {"pinned", {"127.0.0.1"}}}});
        };
    };
    prepare(json::array({answer(10, 10)}), listing(kMockHost));
    const auto r = run_and_score();
    ASSERT_FALSE(r.dir.empty());
    EXPECT_EQ(r.verdict["verdict"], "pass") << r.verdict.dump(2);
    EXPECT_EQ(r.verdict["judge"]["egress"][0]["host"], kMockHost);
    EXPECT_EQ(r.verdict["judge"]["egress"][0]["pinned"], true);
    EXPECT_TRUE(r.verdict["judge"]["turns"][0]["egressRefusals"].empty());
    EXPECT_EQ(judge_requests().size(), 1U);
    for (const auto &line : mock_->log()) {
        EXPECT_NE(line.value("kind", ""), "connect") << "the invoker's proxy carried " << line;
    }
    expect_run_record_valid(r);

    prepare(json::array({answer(10, 10)}), listing("api.elsewhere.test"));
    const auto refused = run_and_score();
    ASSERT_FALSE(refused.dir.empty());
    EXPECT_EQ(refused.verdict["verdict"], "error") << refused.verdict.dump(2);
    const auto &refusals = refused.verdict["judge"]["turns"][0]["egressRefusals"];
    ASSERT_FALSE(refusals.empty()) << refused.verdict.dump(2);
    EXPECT_EQ(refusals[0]["host"], kMockHost);
    EXPECT_TRUE(judge_requests().empty()) << "the judge reached the API";
    EXPECT_EQ(refused.score.status, 3);
    expect_run_record_valid(refused);
}

// The rubric lies in the evaluation folder, which a confined target never sees: the target is
// given the rubric's host path and copies what it can read of it into an artifact.
TEST_F(ClaudeJudge, AConfinedTargetCannotReadTheRubric) {
    const auto rubric_path = (eval() / "rubric.md").string();
    write_file((eval() / "probes" / "greet.json").string(),
               json{{"entry", "greeter"}, {"args", {rubric_path}}}.dump());
    prepare(json::array({answer(10, 10)}));
    const auto r = run_and_score();
    ASSERT_FALSE(r.dir.empty());
    const auto seen =
        read_file((r.dir / "trials" / "1" / "artifacts" / "greeter" / "seen").string());
    EXPECT_EQ(seen.find("The greeting names Ada."), std::string::npos) << seen;
    EXPECT_FALSE(seen.empty());  // cat said why it could not
    // The audit lists the attempt: the run is Invalid.
    EXPECT_EQ(r.run.status, 3) << r.run.err;
    const auto &observed = r.trial["observedMounts"];
    EXPECT_NE(std::find(observed.begin(), observed.end(), rubric_path), observed.end()) << observed;
}

// The control: opted out, the same target reads the rubric, so the test above could see a read.
TEST_F(ClaudeJudge, OptedOutTheSameTargetReadsTheRubric) {
    const auto rubric_path = (eval() / "rubric.md").string();
    write_file((eval() / "probes" / "greet.json").string(),
               json{{"entry", "greeter"}, {"args", {rubric_path}}}.dump());
    prepare(json::array({answer(10, 10)}),
            [](json &evaluation) { evaluation["confinement"] = false; });
    const auto r = run_and_score();
    ASSERT_FALSE(r.dir.empty());
    const auto seen =
        read_file((r.dir / "trials" / "1" / "artifacts" / "greeter" / "seen").string());
    EXPECT_NE(seen.find("The greeting names Ada."), std::string::npos) << seen;
}

}  // namespace
}  // namespace tea::test::clients
