// The real Claude Code CLI as a logged-in registry entry, end to end through `tea-evaluate run`
// and `score`: the evaluation of examples/claude-agent (its target execs the CLI, its entry
// declares "login": "claude" and pins the mock's made-up host to 127.0.0.1), with this test's
// port, CLI and certificate authority written in, against the Messages API mock.
//
// The scripted agent (a) writes a file in its workspace, which the artifact collects; (b) reads
// the grading material in the evaluation folder, finds nothing, and the audit lists it (run and
// score exit 3); (c) prints the Authorization header the mock echoes, which no file of the run and
// no line tea-evaluate prints may hold. Each login route of the claude adapter, a token rotated in
// the file during the call, and a host with neither route. The control: the same session opted
// out with no login leaves the token in clear in the records. Then the example's own script.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
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
constexpr const char *kMockHost = "api.mock.test";
// The file the agent writes, relative to the call's working directory (the workspace), and the
// name the entry's artifact gives it.
constexpr const char *kWritten = "made-by-agent.txt";

// Every file under `dir` that holds `secret`, one path a line; "" when none does.
std::string files_holding(const fs::path &dir, const std::string &secret) {
    std::string found;
    for (const auto &e : fs::recursive_directory_iterator(dir)) {
        if (e.is_regular_file() && read_file(e.path().string()).find(secret) != std::string::npos) {
            found += e.path().string() + "\n";
        }
    }
    return found;
}

// The turns of a session that writes the file and echoes its credential, reading nothing.
json write_echo_turns(const std::string &echo) {
    return json::array({
        json::array({{{"type", "tool_use"},
                      {"name", "Write"},
                      {"input", {{"file_path", kWritten}, {"content", kWrittenContent}}}}}),
        json::array({{{"type", "text"}, {"text", echo}}}),
    });
}

class ClaudeEvaluation : public ::testing::Test {
   protected:
    void SetUp() override {
        ASSERT_TRUE(fs::is_regular_file(TEA_TEST_CLAUDE))
            << TEA_TEST_CLAUDE << " is missing: scripts/install-deps.sh installs it";
        fs::create_directories(project());
        fs::create_directories(home());
        fs::create_directories(base() / "mock");
        fs::copy(kSource / "examples" / "claude-agent", project(), fs::copy_options::recursive);
        std::error_code ec;
        fs::remove_all(eval() / "runs", ec);
        token_ = "sk-ant-oat01-" + bwrap::random_token(32);
    }

    [[nodiscard]] const fs::path &base() const { return dir_.path(); }
    [[nodiscard]] fs::path project() const { return base() / "project"; }
    [[nodiscard]] fs::path eval() const { return project() / ".tea"; }
    [[nodiscard]] fs::path home() const { return base() / "home"; }
    [[nodiscard]] fs::path credentials() const { return home() / ".claude" / ".credentials.json"; }
    // The grading material the agent reaches for: what it must write.
    [[nodiscard]] fs::path expected() const { return eval() / "evaluator" / "expected.txt"; }

    MessagesApiMock &start_mock(const json &turns) {
        return mock_.emplace(base() / "mock", kMockHost, turns);
    }

    // Writes this run's mock port, the CLI's directory and the mock's authority (a file of the
    // probe, so it lands in the workspace) into the example, lets `change` edit the evaluation,
    // and commits the project.
    void prepare(const std::function<void(json &)> &change = {}) {
        point_example_at_mock(eval(), "session", *mock_, TEA_TEST_CLAUDE, change);
        commit_project(project(), "claude-agent");
    }

    // The login file as `claude setup-token`'s subscription leaves it, with the inference scope
    // alone, so the CLI sends no profile request.
    void write_credentials(const std::string &access_token) const {
        fs::create_directories(credentials().parent_path());
        const json file{{"claudeAiOauth",
                         {{"accessToken", access_token},
                          {"refreshToken", refresh_token_},
                          {"expiresAt", 4102444800000LL},
                          {"scopes", {"user:inference"}},
                          {"subscriptionType", "max"}}}};
        write_file(credentials().string(), file.dump());
        fs::permissions(credentials(), fs::perms::owner_read | fs::perms::owner_write);
    }

    // tea-evaluate's environment: this test's home, configuration and private root, what the
    // entry's environmentKeys pass to the CLI, and `extra` over it. No credential of the machine.
    // tea-evaluate's environment, with the CLI the example's target execs.
    [[nodiscard]] std::vector<std::string> environment(
        const std::vector<std::string> &extra) const {
        auto items = extra;
        items.insert(items.begin(), "CLAUDE_BIN=" + std::string{TEA_TEST_CLAUDE});
        return evaluation_environment(base(), home(), *mock_, items);
    }

    static Outcome tea(const std::vector<std::string> &env, std::vector<std::string> args) {
        args.insert(args.begin(), TEA_EVALUATE_BIN);
        return run(args, env);
    }

    [[nodiscard]] static std::string stdout_of(const fs::path &run_dir) {
        return read_file((run_dir / "trials" / "1" / "calls" / "01-session.stdout").string());
    }

    // What the API was sent back for the Read of turn 1 ("" when there was none).
    [[nodiscard]] std::string read_result() const {
        const auto results = tool_results(mock_->requests());
        const auto read = std::find_if(results.begin(), results.end(), [](const json &t) {
            return t.at("tool_use_id") == "toolu_mock_1_0";
        });
        return read == results.end() ? std::string{} : read->at("content").get<std::string>();
    }

    // Every request reached the mock under the pinned made-up name with `bearer`.
    void expect_requests_with(const std::string &bearer) const {
        const auto requests = mock_->requests();
        EXPECT_FALSE(requests.empty());
        for (const auto &q : requests) {
            EXPECT_EQ(q.at("headers").value("authorization", ""), "Bearer " + bearer) << q.dump();
            EXPECT_EQ(q.at("headers").value("host", ""),
                      std::string{kMockHost} + ":" + std::to_string(mock_->api_port()));
        }
    }

    std::string token_;
    std::string refresh_token_ = "sk-ant-ort01-" + bwrap::random_token(32);
    TempDir dir_{"tea-claude-evaluation", fs::perms::owner_all | fs::perms::group_read |
                                              fs::perms::group_exec | fs::perms::others_read |
                                              fs::perms::others_exec};
    std::optional<MessagesApiMock> mock_;
};

TEST_F(ClaudeEvaluation, TheTokenRouteWritesIsListedAtTheEvaluationFolderAndNoRecordHoldsIt) {
    start_mock(write_read_echo_turns(kWritten, expected()));
    prepare();
    const auto env = environment({"CLAUDE_CODE_OAUTH_TOKEN=" + token_});
    const auto check = tea(env, {"check", eval().string()});
    ASSERT_EQ(check.status, 0) << check.err;
    const auto r = tea(env, {"--json", "run", eval().string()});
    const auto dir = run_dir_of(r);
    ASSERT_FALSE(dir.empty()) << r.status << "\n" << r.out << r.err;
    const auto score = tea(env, {"score", dir.string()});

    // (b) The grading material: absent in the view, listed, and the run and its score invalid.
    EXPECT_EQ(r.status, 3) << r.err;
    EXPECT_EQ(score.status, 3) << score.err;
    const auto record = read_json(dir / "run.json");
    const auto &trial = record["trials"][0];
    EXPECT_EQ(trial["observedMountsChannel"], "complete");
    // The CLI's Read also opens the folders on the way to the file: all in the evaluation folder.
    const auto &observed = trial["observedMounts"];
    EXPECT_NE(std::find(observed.begin(), observed.end(), expected().string()), observed.end())
        << observed;
    for (const auto &path : observed) {
        const auto p = path.get<std::string>();
        EXPECT_TRUE(p == eval().string() || p.rfind(eval().string() + "/", 0) == 0) << p;
    }
    EXPECT_NE(read_result().find("does not exist"), std::string::npos) << read_result();
    EXPECT_EQ(read_result().find(kWrittenContent), std::string::npos) << read_result();

    // (a) The file the agent wrote, collected.
    EXPECT_EQ(read_file((dir / "trials" / "1" / "artifacts" / "agent" / "written").string()),
              kWrittenContent)
        << stdout_of(dir);
    EXPECT_EQ(trial["verdict"]["verdict"], "pass") << trial["verdict"];

    // (c) The token went to the mock through the pinned route, and came back redacted.
    expect_requests_with(token_);
    EXPECT_EQ(claude_result(stdout_of(dir)), "credential: Bearer [redacted]") << stdout_of(dir);
    EXPECT_TRUE(record["egressRefusals"].empty()) << record["egressRefusals"];
    EXPECT_EQ(record["egress"][0]["items"][0]["pinned"], true) << record["egress"];
    ASSERT_EQ(record["logins"].size(), 1U) << record["logins"];
    EXPECT_EQ(record["logins"][0]["variables"], json::array({"CLAUDE_CODE_OAUTH_TOKEN"}));
    EXPECT_TRUE(record["logins"][0]["files"].empty());
    EXPECT_EQ(files_holding(dir, token_), "");
    EXPECT_EQ(r.err.find(token_), std::string::npos) << r.err;
    EXPECT_EQ(score.err.find(token_), std::string::npos) << score.err;
}

TEST_F(ClaudeEvaluation, TheFileRouteAuthenticatesWithTheFileUnlistedAndNoRecordHoldsIt) {
    const std::string file_token = "sk-ant-oat01-" + bwrap::random_token(32);
    write_credentials(file_token);
    const auto before = read_file(credentials().string());
    start_mock(write_echo_turns("credential: {{authorization}}"));
    prepare();
    const auto env = environment({});
    const auto r = tea(env, {"--json", "run", eval().string()});
    const auto dir = run_dir_of(r);
    ASSERT_FALSE(dir.empty()) << r.status << "\n" << r.out << r.err;
    const auto score = tea(env, {"score", dir.string()});

    // The CLI found the file in its private home and sent its token; neither its read nor a
    // refused write of it is listed, and it asked no other host.
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(score.status, 0) << score.err;
    expect_requests_with(file_token);
    const auto record = read_json(dir / "run.json");
    EXPECT_TRUE(record["trials"][0]["observedMounts"].empty()) << record["trials"][0];
    EXPECT_TRUE(record["egressRefusals"].empty()) << record["egressRefusals"];
    ASSERT_EQ(record["logins"].size(), 1U) << record["logins"];
    EXPECT_TRUE(record["logins"][0]["variables"].empty());
    EXPECT_EQ(
        record["logins"][0]["files"],
        json::array({{{"file", "<credentials-file>"}, {"homePath", ".claude/.credentials.json"}}}));
    EXPECT_EQ(read_file((dir / "trials" / "1" / "artifacts" / "agent" / "written").string()),
              kWrittenContent);
    EXPECT_EQ(claude_result(stdout_of(dir)), "credential: Bearer [redacted]") << stdout_of(dir);
    EXPECT_EQ(read_file(credentials().string()), before);
    for (const auto &secret : {file_token, refresh_token_}) {
        EXPECT_EQ(files_holding(dir, secret), "");
        EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
        EXPECT_EQ(score.err.find(secret), std::string::npos) << score.err;
    }
}

// The host's client rotates the token in the file while the CLI is between two requests: the call
// keeps the copy it started with, and the rotated token, which the agent's last turn prints, is
// redacted from every record.
TEST_F(ClaudeEvaluation, ATokenRotatedInTheFileDuringTheCallIsRedacted) {
    const std::string file_token = "sk-ant-oat01-" + bwrap::random_token(32);
    const std::string rotated = "sk-ant-oat01-" + bwrap::random_token(32);
    write_credentials(file_token);
    const auto gate = base() / "mock" / "rotated";
    auto turns = write_echo_turns("credential: {{authorization}} rotated: " + rotated);
    turns[1].insert(turns[1].begin(), json::object({{"type", "wait"}, {"path", gate.string()}}));
    start_mock(turns);
    prepare();
    std::atomic<bool> done{false};
    std::thread host_client([&] {
        const auto log = base() / "mock" / "requests.jsonl";
        const bool asked = bwrap::eventually([&] {
            std::error_code ec;
            return done || fs::file_size(log, ec) > 0;
        });
        if (asked && !done) write_credentials(rotated);
        write_file(gate.string(), "");
    });
    const auto r = tea(environment({}), {"--json", "run", eval().string()});
    done = true;
    host_client.join();
    const auto dir = run_dir_of(r);
    ASSERT_FALSE(dir.empty()) << r.status << "\n" << r.out << r.err;
    EXPECT_EQ(r.status, 0) << r.err;
    expect_requests_with(file_token);
    EXPECT_EQ(claude_result(stdout_of(dir)), "credential: Bearer [redacted] rotated: [redacted]")
        << stdout_of(dir);
    EXPECT_EQ(files_holding(dir, rotated), "");
    EXPECT_EQ(files_holding(dir, file_token), "");
    EXPECT_EQ(r.err.find(rotated), std::string::npos) << r.err;
}

TEST_F(ClaudeEvaluation, NeitherRouteStopsTheRunBeforeTheCliStarts) {
    start_mock(write_read_echo_turns(kWritten, expected()));
    prepare();
    const auto r = tea(environment({}), {"--json", "run", eval().string()});
    EXPECT_EQ(r.status, 12) << r.err;
    for (const auto &named : {std::string{"entry 'agent'"}, credentials().string(),
                              std::string{"CLAUDE_CODE_OAUTH_TOKEN"}}) {
        EXPECT_NE(r.err.find(named), std::string::npos) << named << "\n" << r.err;
    }
    EXPECT_TRUE(mock_->requests().empty());
    EXPECT_FALSE(fs::exists(eval() / "runs"));
}

// The control of the redaction probe: the same session opted out, with no login (the CLI keeps
// the invoker's environment, the token in it, and reaches the mock through the mock's own
// proxy), leaves the token in clear in the records; and, unconfined, the read gets the grading
// material.
TEST_F(ClaudeEvaluation, OptedOutWithNoLoginTheRecordsHoldTheToken) {
    start_mock(write_read_echo_turns(kWritten, expected()));
    prepare([](json &evaluation) {
        evaluation["confinement"] = false;
        evaluation["registry"][0].erase("login");
    });
    const auto r =
        tea(environment({"CLAUDE_CODE_OAUTH_TOKEN=" + token_, "HTTPS_PROXY=" + mock_->proxy_url()}),
            {"--json", "run", eval().string()});
    const auto dir = run_dir_of(r);
    ASSERT_FALSE(dir.empty()) << r.status << "\n" << r.out << r.err;
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(read_result().find(kWrittenContent), std::string::npos) << read_result();
    EXPECT_EQ(claude_result(stdout_of(dir)), "credential: Bearer " + token_) << stdout_of(dir);
    EXPECT_NE(files_holding(dir, token_), "");
}

// The CLI opens CLAUDE.md, CLAUDE.local.md and AGENTS.md (and the same under .claude/) in each
// directory above its working one, which in a run lie in the private root the audit always
// lists. Those names are absent beneath the cover, and the audit leaves such walk-ups out
// (docs/audit.md), so a session that reaches for nothing is not Invalid. The workspace's own
// CLAUDE.md is read, and its instruction reaches the API. The Read of the evaluation folder, the
// control that the audit still lists what the agent reaches for, is in the token test.
TEST_F(ClaudeEvaluation, ItsWalkUpForMemoryFilesAboveTheWorkspaceIsNotListed) {
    start_mock(write_echo_turns("credential: {{authorization}}"));
    const std::string note = "memory-file-" + bwrap::random_token(8);
    write_file((project() / "CLAUDE.md").string(), "Always mention " + note + ".\n");
    prepare();
    const auto r =
        tea(environment({"CLAUDE_CODE_OAUTH_TOKEN=" + token_}), {"--json", "run", eval().string()});
    const auto dir = run_dir_of(r);
    ASSERT_FALSE(dir.empty()) << r.status << "\n" << r.out << r.err;
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(read_json(dir / "run.json")["trials"][0]["observedMounts"].empty())
        << read_json(dir / "run.json")["trials"][0].dump(2);
    bool instructed = false;
    for (const auto &request : mock_->requests()) {
        instructed = instructed || request.dump().find(note) != std::string::npos;
    }
    EXPECT_TRUE(instructed) << "the workspace's CLAUDE.md never reached the API";
    EXPECT_EQ(claude_result(stdout_of(dir)), "credential: Bearer [redacted]") << stdout_of(dir);
}

// The sealed-brief agent (docs/agent-evaluations.md) as the real CLI, answered from the mock's
// plain turns, in a conversation with a confined target that echoes what it is told: three
// agent turns (the opening, an answer that quotes the target's reply, the done marker), each
// recorded in the call record and the transcript; the agent resumed its session from turn to
// turn, got the brief in its system prompt and a login grant of its own from the claude adapter
// ("sealed brief session"), which the target (whose entry declares no login) never held; no record
// holds the token or the brief.
TEST_F(ClaudeEvaluation, TheSealedBriefAgentHoldsAConversationRecordedInTheCall) {
    const auto say = [](const std::string &text) {
        return json::array({{{"type", "text"}, {"text", text}}});
    };
    mock_.emplace(base() / "mock", kMockHost, json::array(),
                  json::array({say("Hello, I was charged twice."), say("Told: {{last-user-text}}"),
                               say("[[done]]")}));
    const std::string sealed = "SEALED-" + bwrap::random_token(8);
    fs::create_directories(eval() / "briefs");
    write_file((eval() / "briefs" / "customer.md").string(),
               "You were charged twice for order 42. " + sealed + "\n");
    write_file((project() / "bin" / "helpdesk").string(),
               "#!/usr/bin/python3\nimport json, os, sys\n"
               "print('target token: ' + os.environ.get('CLAUDE_CODE_OAUTH_TOKEN', 'none'), "
               "file=sys.stderr, flush=True)\n"
               "for line in sys.stdin:\n"
               "    said = json.loads(line)['text']\n"
               "    print(json.dumps({'role': 'assistant', 'text': 'you said: ' + said}), "
               "flush=True)\n");
    fs::permissions(project() / "bin" / "helpdesk", fs::perms{0755});
    write_file((eval() / "probes" / "session.json").string(),
               json{{"entry", "helpdesk"},
                    {"conversation",
                     {{"brief", "briefs/customer.md"},
                      {"maxTurns", 4},
                      {"turnTimeoutMs", 60000},
                      {"agent",
                       {{"program", TEA_TEST_CLAUDE},
                        {"model", "claude-test"},
                        {"login", "claude"},
                        {"environmentKeys",
                         {"ANTHROPIC_BASE_URL", "HTTPS_PROXY", "NODE_EXTRA_CA_CERTS",
                          "CLAUDE_CODE_MAX_RETRIES"}},
                        {"egress",
                         {{{"host", kMockHost},
                           {"port", mock_->api_port()},
                           {"pinned", {"127.0.0.1"}}}}}}}}}}
                   .dump());
    prepare([](json &evaluation) {
        evaluation["registry"].push_back({{"interfaceId", "helpdesk"},
                                          {"executable", "helpdesk"},
                                          {"target", "bin/helpdesk"},
                                          {"maxElapsedMs", 240000}});
    });
    // The agent runs outside every confinement but in a network of its own: it reaches the mock
    // through a route of its own, whose HTTPS_PROXY replaces the invoker's (the mock's own proxy,
    // which must carry nothing), and trusts the mock's authority by an absolute path.
    const auto env =
        environment({"CLAUDE_CODE_OAUTH_TOKEN=" + token_, "HTTPS_PROXY=" + mock_->proxy_url(),
                     "NODE_EXTRA_CA_CERTS=" + mock_->ca_file().string()});
    const auto check = tea(env, {"check", eval().string()});
    ASSERT_EQ(check.status, 0) << check.err;
    const auto r = tea(env, {"--json", "run", eval().string()});
    const auto dir = run_dir_of(r);
    ASSERT_FALSE(dir.empty()) << r.status << "\n" << r.out << r.err;
    EXPECT_EQ(r.status, 0) << r.err;
    const auto call = read_json(dir / "run.json")["trials"][0]["calls"][0];
    const auto &relay = call["relay"];
    EXPECT_EQ(relay["ended"], "agentDone") << relay.dump(2);
    EXPECT_EQ(relay["agentMessages"], 2);
    const std::string opening = "Hello, I was charged twice.";
    const std::string second = "Told: The assistant replied:\n\nyou said: " + opening;
    const std::vector<std::string> expected_turns{opening, "you said: " + opening, second,
                                                  "you said: " + second, "[[done]]"};
    ASSERT_EQ(relay["turns"].size(), expected_turns.size()) << relay.dump(2);
    for (std::size_t i = 0; i < expected_turns.size(); ++i) {
        EXPECT_EQ(relay["turns"][i]["from"], i % 2 == 0 ? "agent" : "target");
        EXPECT_EQ(relay["turns"][i]["text"], expected_turns[i]) << i;
    }
    EXPECT_EQ(call["infrastructureError"], false);
    const auto transcript =
        read_file((dir / "trials" / "1" / relay["transcript"].get<std::string>()).string());
    EXPECT_NE(transcript.find("you said: Told: The assistant replied:"), std::string::npos)
        << transcript;
    EXPECT_EQ(relay["agent"]["model"], "claude-test");
    // The agent's grant is its own, asked of the adapter under the probe's name; the target's
    // entry declares no login, and its environment held no token.
    EXPECT_EQ(relay["agent"]["login"], "claude");
    EXPECT_EQ(relay["agent"]["loginGrant"], "sealed brief session");
    EXPECT_EQ(relay["agent"]["egress"][0]["host"], kMockHost);
    for (const auto &turn : relay["agent"]["turns"]) {
        EXPECT_TRUE(turn["egressRefusals"].empty()) << turn.dump();
    }
    for (const auto &line : mock_->log()) {
        EXPECT_NE(line.value("kind", ""), "connect") << "the invoker's proxy carried " << line;
    }
    const auto logins = read_json(dir / "run.json")["logins"];
    const auto grant = std::find_if(logins.begin(), logins.end(), [](const json &l) {
        return l.value("interface", "") == "sealed brief session";
    });
    ASSERT_NE(grant, logins.end()) << logins.dump(2);
    EXPECT_EQ((*grant)["adapter"], "claude");
    EXPECT_EQ((*grant)["variables"], json::array({"CLAUDE_CODE_OAUTH_TOKEN"}));
    EXPECT_EQ(read_file((dir / "trials" / "1" / call["stderr"].get<std::string>()).string()),
              "target token: none\n");

    // The agent's requests: the login's token, no tool offered, the brief in the system prompt,
    // and one conversation carried on (the third request holds the two earlier answers).
    const auto requests = mock_->requests();
    bool briefed = false;
    std::size_t longest = 0;
    for (const auto &q : requests) {
        EXPECT_EQ(q.at("headers").value("authorization", ""), "Bearer " + token_);
        EXPECT_FALSE(q.at("body").contains("tools") && !q.at("body")["tools"].empty()) << q.dump();
        briefed = briefed ||
                  q.at("body").value("system", json{}).dump().find(sealed) != std::string::npos;
        longest = std::max(longest, q.at("body").value("messages", json::array()).size());
    }
    EXPECT_TRUE(briefed) << "no request carried the brief";
    EXPECT_GE(longest, 5U) << "the last turn did not resume the session";
    EXPECT_EQ(files_holding(dir, token_), "");
    EXPECT_EQ(files_holding(dir, sealed), "");
}

// scripts/run-claude-example.sh, as a user runs it (with this build's binary), holds what it
// claims; without the CLI it says so and fails.
TEST_F(ClaudeEvaluation, TheExampleScriptRunsTheEvaluationAndFailsWithoutTheCli) {
    const auto script = (kSource / "scripts" / "run-claude-example.sh").string();
    const auto env = [&](const std::string &claude) {
        return environment_with({"TEA_EVALUATE_BIN=" + std::string{TEA_EVALUATE_BIN},
                                 "XDG_CONFIG_HOME=/nonexistent-tea-test",
                                 "TEA_EVALUATE_PRIVATE_ROOT=" + (base() / "private").string(),
                                 "CLAUDE_BIN=" + claude, "CLAUDE_CODE_OAUTH_TOKEN="});
    };
    fs::create_directory(base() / "example");
    const auto ran = run({"/bin/bash", script, (base() / "example").string()}, env(""));
    EXPECT_EQ(ran.status, 0) << ran.out << ran.err;
    EXPECT_NE(ran.out.find("ok: no record holds the token"), std::string::npos) << ran.out;
    EXPECT_EQ(ran.err.find("NOT AS EXPECTED"), std::string::npos) << ran.err;

    const auto missing = run({"/bin/bash", script, (base() / "example-without").string()},
                             env((base() / "no-claude" / "claude").string()));
    EXPECT_EQ(missing.status, 1) << missing.out << missing.err;
    EXPECT_NE(missing.err.find("no Claude Code CLI at"), std::string::npos) << missing.err;
    EXPECT_NE(missing.err.find("scripts/install-deps.sh"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace tea::test::clients
