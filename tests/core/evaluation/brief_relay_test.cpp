// The relay between the sealed-brief agent and a target (evaluation/brief_relay.hpp), against
// real target processes speaking, or failing, the protocol, with a scripted agent.
#include "evaluation/brief_relay.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "exec/call_runner.hpp"
#include "support/temp_dir.hpp"

namespace tea::evaluation {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;

// A target that speaks the protocol: each message answered with "you said: <text>".
constexpr const char *kEchoTarget = R"(
import json, sys
for line in sys.stdin:
    said = json.loads(line)["text"]
    print(json.dumps({"role": "assistant", "text": "you said: " + said}), flush=True)
)";

class BriefRelayTest : public ::testing::Test {
   protected:
    // Runs `script` (Python) as the target of a call that confines nothing, with the relay's
    // conversation; the agent says `lines` in turn, then the done marker.
    exec::CallResult converse(BriefRelay &relay, const std::string &script) {
        std::ofstream{dir_ / "target.py"} << script;
        exec::ExecPlan plan;
        plan.argv = {"python3", (dir_ / "target.py").string()};
        plan.env = {"PATH=/usr/bin:/bin"};
        plan.cwd = dir_.string();
        plan.confinement = "opt-out";
        exec::RunOptions run;
        run.err = {dir_ / "stderr", 1 << 20, -1, nullptr};
        run.kill_grace = milliseconds{300};
        run.timeout = milliseconds{60000};
        run.conversation = relay.conversation();
        fs::remove(dir_ / "stderr");
        return exec::run_call(plan, run);
    }
    // An agent that says each of `lines`, then the done marker; what it was told is kept.
    AgentVoice scripted(std::vector<std::string> lines) {
        return [this, lines = std::move(lines)](const std::optional<std::string> &reply,
                                                milliseconds) {
            told_.push_back(reply.value_or("<opening>"));
            const auto n = told_.size();
            if (n > lines.size()) return AgentMessage{true, "thanks [[done]]", {}};
            return AgentMessage{true, lines[n - 1], {}};
        };
    }
    ConversationProbe probe(int max_turns = 8, std::int64_t turn_timeout_ms = 10000) {
        ConversationProbe p;
        p.brief_path = "briefs/customer.md";
        p.brief = "You want a refund.";
        p.max_turns = max_turns;
        p.turn_timeout_ms = turn_timeout_ms;
        return p;
    }
    static std::vector<json> lines_of(const std::string &jsonl) {
        std::vector<json> out;
        std::istringstream in{jsonl};
        for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
        return out;
    }

    test::TempDir tmp_{"tea-brief-relay"};
    const fs::path &dir_ = tmp_.path();
    std::vector<std::string> told_;
};

// Positive control for every failure below: a target that speaks the protocol is talked with
// until the agent says it is done, and each turn is recorded.
TEST_F(BriefRelayTest, ATargetThatSpeaksTheProtocolIsTalkedWithUntilTheAgentIsDone) {
    BriefRelay relay{probe(), scripted({"hello", "I want my money back"})};
    const auto r = converse(relay, kEchoTarget);
    ASSERT_TRUE(r.started) << r.start_error;
    EXPECT_TRUE(r.ended_by_runtime) << "the target kept reading; the runtime ended it";
    EXPECT_EQ(relay.ended(), RelayEnd::agent_done);
    EXPECT_EQ(told_, (std::vector<std::string>{"<opening>", "you said: hello",
                                               "you said: I want my money back"}));
    const auto record = relay.record("relay/p.jsonl");
    EXPECT_EQ(record["ended"], "agentDone");
    EXPECT_EQ(record["agentMessages"], 2);
    EXPECT_EQ(record["targetFailed"], false);
    EXPECT_EQ(record["transcript"], "relay/p.jsonl");
    EXPECT_EQ(record["briefFile"], "briefs/customer.md");
    // sha256("You want a refund."), and never the brief's text.
    EXPECT_EQ(record["briefSha256"].get<std::string>().size(), 64U);
    EXPECT_EQ(record.dump().find("You want a refund"), std::string::npos);
    ASSERT_EQ(record["turns"].size(), 5U);
    EXPECT_EQ(record["turns"][0]["from"], "agent");
    EXPECT_EQ(record["turns"][1]["from"], "target");
    EXPECT_EQ(record["turns"][1]["text"], "you said: hello");
    EXPECT_EQ(record["turns"][4]["text"], "thanks [[done]]");
    const auto transcript = lines_of(relay.transcript());
    ASSERT_EQ(transcript.size(), 5U);
    EXPECT_EQ(transcript[3]["text"], "you said: I want my money back");
    EXPECT_EQ(transcript[3]["turn"], 4);
}

TEST_F(BriefRelayTest, TheConversationStopsAtMaxTurns) {
    BriefRelay relay{probe(2), [](const std::optional<std::string> &, milliseconds) {
                         return AgentMessage{true, "again", {}};
                     }};
    (void)converse(relay, kEchoTarget);
    EXPECT_EQ(relay.ended(), RelayEnd::max_turns);
    const auto record = relay.record("t");
    EXPECT_EQ(record["agentMessages"], 2);
    EXPECT_EQ(record["turns"].size(), 4U);
    EXPECT_FALSE(relay.target_failed());
}

TEST_F(BriefRelayTest, ALineOutsideTheProtocolEndsTheConversationAndIsRecorded) {
    BriefRelay relay{probe(), scripted({"hello", "more"})};
    (void)converse(relay,
                   "import sys\nsys.stdin.readline()\nprint('hello, not json', flush=True)\n"
                   "sys.stdin.readline()\n");
    EXPECT_EQ(relay.ended(), RelayEnd::target_malformed);
    EXPECT_TRUE(relay.target_failed());
    const auto record = relay.record("t");
    ASSERT_EQ(record["turns"].size(), 2U);
    EXPECT_EQ(record["turns"][1]["text"], "hello, not json");
    EXPECT_EQ(record["turns"][1]["malformed"], true);
    EXPECT_EQ(told_.size(), 1U) << "the agent is not asked again";
}

TEST_F(BriefRelayTest, JsonOfTheWrongShapeOrDepthIsOutsideTheProtocol) {
    for (const std::string &line : std::vector<std::string>{R"({"role": "user", "text": "hi"})",
                                                            R"({"role": "assistant", "text": 7})",
                                                            "[1, 2]", std::string(100000, '[')}) {
        told_.clear();
        BriefRelay relay{probe(), scripted({"hello"})};
        (void)converse(relay, "import sys\nsys.stdin.readline()\nsys.stdout.write(" +
                                  json(line).dump() +
                                  " + '\\n')\nsys.stdout.flush()\n"
                                  "sys.stdin.readline()\n");
        EXPECT_EQ(relay.ended(), RelayEnd::target_malformed) << line.substr(0, 40);
    }
}

TEST_F(BriefRelayTest, ALineOverTheCapEndsTheConversationWithoutBeingHeld) {
    BriefRelay relay{probe(8, 3000), scripted({"hello"})};
    (void)converse(relay, "import sys\nsys.stdin.readline()\nsys.stdout.write('x' * " +
                              std::to_string(kRelayMaxLineBytes * 2) +
                              " + '\\n')\nsys.stdout.flush()\nsys.stdin.readline()\n");
    EXPECT_EQ(relay.ended(), RelayEnd::target_line_too_long);
    const auto record = relay.record("t");
    EXPECT_NE(record["detail"].get<std::string>().find(std::to_string(kRelayMaxLineBytes * 2)),
              std::string::npos)
        << record["detail"];
}

TEST_F(BriefRelayTest, ASilentTargetEndsTheConversationAtTheTurnTimeout) {
    BriefRelay relay{probe(8, 500), scripted({"hello"})};
    const auto start = std::chrono::steady_clock::now();
    const auto r = converse(relay, "import sys, time\nsys.stdin.readline()\ntime.sleep(60)\n");
    EXPECT_EQ(relay.ended(), RelayEnd::target_silent);
    EXPECT_TRUE(r.ended_by_runtime);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds{20});
}

TEST_F(BriefRelayTest, ATargetThatExitsEarlyEndsTheConversation) {
    BriefRelay relay{probe(), scripted({"hello", "still there?"})};
    const auto r = converse(relay,
                            "import json, sys\nsys.stdin.readline()\n"
                            "print(json.dumps({'role': 'assistant', 'text': 'bye'}))\n");
    EXPECT_EQ(relay.ended(), RelayEnd::target_closed);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(relay.record("t")["agentMessages"], 2);
}

TEST_F(BriefRelayTest, AChildThatOutlivesTheTargetIsEndedWithTheCall) {
    const auto pid_file = dir_ / "child.pid";
    // The target answers once, then leaves a child holding its stdout open and exits.
    BriefRelay relay{probe(8, 2000), scripted({"hello", "again"})};
    const auto start = std::chrono::steady_clock::now();
    const auto r = converse(relay,
                            "import json, os, subprocess, sys\nsys.stdin.readline()\n"
                            "print(json.dumps({'role': 'assistant', 'text': 'hi'}), "
                            "flush=True)\nchild = subprocess.Popen(['sleep', '300'])\n"
                            "open('" +
                                pid_file.string() + "', 'w').write(str(child.pid))\nos._exit(0)\n");
    ASSERT_TRUE(r.started);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds{20})
        << "the child's open stdout did not hold the relay";
    EXPECT_TRUE(relay.target_failed()) << to_string(*relay.ended());
    std::ifstream in{pid_file};
    pid_t child = -1;
    in >> child;
    ASSERT_GT(child, 0);
    // Reaped by init once ended; give it a moment.
    for (int i = 0; i < 100 && fs::exists("/proc/" + std::to_string(child)); ++i) {
        std::this_thread::sleep_for(milliseconds{20});
    }
    EXPECT_FALSE(fs::exists("/proc/" + std::to_string(child))) << "the child is still running";
}

TEST_F(BriefRelayTest, AnAgentThatFailsSendsNothingAndSaysWhy) {
    BriefRelay relay{probe(), [](const std::optional<std::string> &, milliseconds) {
                         return AgentMessage{false, {}, "the agent exited with status 4"};
                     }};
    // The target records whatever reaches it: nothing must.
    const auto seen = dir_ / "seen";
    (void)converse(relay,
                   "import sys\nopen('" + seen.string() + "', 'w').write(sys.stdin.read())\n");
    EXPECT_EQ(relay.ended(), RelayEnd::agent_failed);
    EXPECT_FALSE(relay.target_failed());
    const auto record = relay.record("t");
    EXPECT_NE(record["detail"].get<std::string>().find("status 4"), std::string::npos);
    EXPECT_EQ(record["turns"].size(), 0U);
    std::ifstream in{seen};
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>{in}, {}), "")
        << "the relay closed the target's stdin with nothing sent";
}

TEST_F(BriefRelayTest, ALongTurnIsCutInTheRecordAndWholeInTheTranscript) {
    const std::string long_text(5000, 'a');
    BriefRelay relay{probe(), scripted({long_text})};
    (void)converse(relay, kEchoTarget);
    const auto record = relay.record("t");
    EXPECT_EQ(record["turns"][0]["bytes"], 5000);
    EXPECT_EQ(record["turns"][0]["textCut"], true);
    EXPECT_EQ(record["turns"][0]["text"].get<std::string>().size(), kRelayRecordTextBytes);
    EXPECT_EQ(lines_of(relay.transcript())[0]["text"], long_text);
}

}  // namespace
}  // namespace tea::evaluation
