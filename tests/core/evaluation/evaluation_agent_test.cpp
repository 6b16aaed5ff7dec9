// The evaluation layer's agent CLI: the arguments of a turn and how the CLI's JSON result is read.
// The turns of the real CLI against the Messages API mock are in tests/clients.
#include "evaluation/evaluation_agent.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace tea::evaluation {
namespace {

AgentSetup claude_setup() {
    AgentSetup setup;
    setup.program = "/opt/claude/bin/claude";
    setup.model = "claude-judge-model";
    return setup;
}

// The value that follows `flag` in argv ("" when the flag is absent or last).
std::string after(const std::vector<std::string> &argv, const std::string &flag) {
    const auto it = std::find(argv.begin(), argv.end(), flag);
    return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

TEST(EvaluationAgentArguments, PinTheModelOfferNoToolAndSetTheSystemPrompt) {
    AgentTurnRequest request;
    request.system_prompt = "You grade.";
    const auto argv = agent_turn_arguments(claude_setup(), request);
    EXPECT_EQ(argv.front(), "/opt/claude/bin/claude");
    EXPECT_NE(std::find(argv.begin(), argv.end(), "-p"), argv.end());
    EXPECT_EQ(after(argv, "--output-format"), "json");
    EXPECT_EQ(after(argv, "--model"), "claude-judge-model");
    const auto tools = std::find(argv.begin(), argv.end(), "--tools");
    ASSERT_NE(tools, argv.end());
    ASSERT_NE(tools + 1, argv.end());
    EXPECT_EQ(*(tools + 1), "");  // none
    EXPECT_EQ(after(argv, "--system-prompt"), "You grade.");
    EXPECT_EQ(std::find(argv.begin(), argv.end(), "--resume"), argv.end());
    // The prompt itself goes on stdin, never in argv (where any process could read it).
    EXPECT_EQ(std::count(argv.begin(), argv.end(), "You grade."), 1);
}

TEST(EvaluationAgentArguments, AContinuationResumesItsSession) {
    AgentTurnRequest request;
    request.resume = "5a2f0c7e-session";
    const auto argv = agent_turn_arguments(claude_setup(), request);
    EXPECT_EQ(after(argv, "--resume"), "5a2f0c7e-session");
}

TEST(EvaluationAgentAnswer, ASuccessfulResultIsItsTextAndSession) {
    const auto turn = read_agent_answer(
        R"({"type":"result","subtype":"success","is_error":false,"result":"{\"criteria\":[]}",)"
        R"("session_id":"abc-123","duration_ms":12})");
    EXPECT_TRUE(turn.answered);
    EXPECT_EQ(turn.text, R"({"criteria":[]})");
    EXPECT_EQ(turn.session_id, "abc-123");
    EXPECT_EQ(turn.error, "");
}

TEST(EvaluationAgentAnswer, AnErrorResultIsNoAnswerAndSaysWhy) {
    const auto turn = read_agent_answer(
        R"({"type":"result","subtype":"success","is_error":true,"result":"API Error: 500",)"
        R"("session_id":"abc-123"})");
    EXPECT_FALSE(turn.answered);
    EXPECT_EQ(turn.session_id, "abc-123");
    EXPECT_NE(turn.error.find("API Error: 500"), std::string::npos);
}

TEST(EvaluationAgentAnswer, OutputThatIsNoResultIsNoAnswer) {
    for (const char *output :
         {"", "not json", "[]", R"({"type":"assistant"})",
          R"({"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"s"})",
          R"({"type":"result","subtype":"success","is_error":false,"result":7})"}) {
        const auto turn = read_agent_answer(output);
        EXPECT_FALSE(turn.answered) << output;
        EXPECT_FALSE(turn.error.empty()) << output;
    }
}

}  // namespace
}  // namespace tea::evaluation
