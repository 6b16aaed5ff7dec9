// The agent's command line and the variables it is handed (tools/skill-runner/agent_command.cpp).
#include "agent_command.hpp"

#include <gtest/gtest.h>

namespace tea::skill_runner {
namespace {

TEST(AgentCommand, ClaudeRunsOneNonInteractiveSessionInStreamJson) {
    Options options;
    options.agent = Agent::claude;
    options.max_turns = 7;
    options.agent_args = {"--allowedTools", "Write"};
    EXPECT_EQ(
        agent_command_line(options, "claude"),
        (std::vector<std::string>{"claude", "-p", "--output-format", "stream-json", "--verbose",
                                  "--max-turns", "7", "--allowedTools", "Write"}));
    EXPECT_STREQ(skills_dir(Agent::claude), ".claude/skills");
}

// codex is not installed on the test machines: its session is checked as a command line.
TEST(AgentCommand, CodexRunsExecInJsonWithThePromptFromStdin) {
    Options options;
    options.agent = Agent::codex;
    options.agent_args = {"--model", "o4-mini"};
    EXPECT_EQ(agent_command_line(options, "/opt/codex/bin/codex"),
              (std::vector<std::string>{"/opt/codex/bin/codex", "exec", "--json",
                                        "--skip-git-repo-check", "--model", "o4-mini", "-"}));
    EXPECT_STREQ(skills_dir(Agent::codex), ".codex/skills");
}

TEST(AgentCommand, TheAgentIsHandedOnlyItsShortList) {
    const std::vector<std::string> caller{"HOME=/home/t",
                                          "PATH=/usr/bin",
                                          "LC_ALL=C",
                                          "HTTPS_PROXY=http://127.0.0.1:1",
                                          "CLAUDE_CODE_OAUTH_TOKEN=t",
                                          "OPENAI_API_KEY=k",
                                          "EVALUATION_SECRET=s",
                                          "LD_PRELOAD=/tmp/x.so",
                                          "=nameless",
                                          "NOEQUALS"};
    EXPECT_EQ(
        agent_environment(Agent::claude, caller, "/ws"),
        (std::vector<std::string>{"HOME=/home/t", "PATH=/usr/bin", "LC_ALL=C",
                                  "HTTPS_PROXY=http://127.0.0.1:1", "CLAUDE_CODE_OAUTH_TOKEN=t"}));
    EXPECT_EQ(agent_environment(Agent::codex, caller, "/ws"),
              (std::vector<std::string>{"HOME=/home/t", "PATH=/usr/bin", "LC_ALL=C",
                                        "HTTPS_PROXY=http://127.0.0.1:1", "OPENAI_API_KEY=k"}));
}

TEST(AgentCommand, ARelativeAuthorityFileIsTheWorkingDirectorys) {
    EXPECT_EQ(agent_environment(Agent::claude,
                                {"NODE_EXTRA_CA_CERTS=ca.pem", "SSL_CERT_FILE=/etc/ca.pem"}, "/ws"),
              (std::vector<std::string>{"NODE_EXTRA_CA_CERTS=/ws/ca.pem"}));
    EXPECT_EQ(agent_environment(Agent::codex, {"SSL_CERT_FILE=/etc/ca.pem"}, "/ws"),
              (std::vector<std::string>{"SSL_CERT_FILE=/etc/ca.pem"}));
}

}  // namespace
}  // namespace tea::skill_runner
