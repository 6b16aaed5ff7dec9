// tea-skill-runner run as a program, with small fake agents (shell scripts) in place of the CLI:
// its usage errors, the skill it installs, the prompt it hands on, the variables the agent gets,
// the transcript, its exit codes and that nothing it started outlives it. The real CLI's runs are
// in tests/clients/skill_runner_client_test.cpp.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::test {
namespace {

namespace fs = std::filesystem;

// A claude that reads its prompt and ends as the real one does when all went well.
constexpr const char *kQuietAgent =
    "cat >/dev/null\n"
    "echo '{\"type\":\"system\",\"subtype\":\"init\"}'\n"
    "echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"ok\"}'\n";

class SkillRunner : public ::testing::Test {
   protected:
    void SetUp() override {
        fs::create_directories(home_);
        fs::create_directories(skill_);
        write_file((skill_ / "SKILL.md").string(), "---\nname: notes\n---\nWrite notes.\n");
        write_file(prompt_.string(), "write the notes");
    }

    // The fake agent: a shell script of `body`.
    std::string agent(const std::string &body) {
        const auto path = dir_ / "agent";
        write_file(path.string(), "#!/bin/sh\n" + body);
        fs::permissions(path, fs::perms::owner_all);
        return path.string();
    }

    [[nodiscard]] std::vector<std::string> env() const {
        return {"PATH=/usr/bin:/bin", "HOME=" + home_.string(), "LANG=C.UTF-8",
                "CLAUDE_CODE_OAUTH_TOKEN=token-for-the-agent",
                "EVALUATION_SECRET=not-for-the-agent"};
    }

    Outcome runner(const std::string &agent_body, std::vector<std::string> options = {}) {
        std::vector<std::string> argv{TEA_SKILL_RUNNER_BIN, "--agent",         "claude",
                                      "--agent-bin",        agent(agent_body), "--transcript",
                                      transcript_.string()};
        if (options.empty()) {
            options = {"--skill", skill_.string(), "--prompt-file", prompt_.string()};
        }
        argv.insert(argv.end(), options.begin(), options.end());
        return run(argv, env());
    }

    TempDir dir_{"tea-skill-runner", fs::perms::owner_all};
    fs::path home_ = dir_ / "home";
    fs::path skill_ = dir_ / "notes";
    fs::path prompt_ = dir_ / "prompt.txt";
    fs::path transcript_ = dir_ / "transcript.jsonl";
};

TEST_F(SkillRunner, UsageErrorsExit2AndNameTheOption) {
    const auto none = run({TEA_SKILL_RUNNER_BIN}, env());
    EXPECT_EQ(none.status, 2);
    EXPECT_NE(none.err.find("--agent is required"), std::string::npos) << none.err;
    const auto agent_name = run({TEA_SKILL_RUNNER_BIN, "--agent", "gemini"}, env());
    EXPECT_EQ(agent_name.status, 2);
    EXPECT_NE(agent_name.err.find("gemini"), std::string::npos);
    const auto turns = runner(kQuietAgent, {"--max-turns", "0", "--prompt-file", prompt_.string()});
    EXPECT_EQ(turns.status, 2);
    EXPECT_NE(turns.err.find("--max-turns"), std::string::npos);
    const auto twice = runner(kQuietAgent, {"--skill", skill_.string(), "--skill", "/",
                                            "--prompt-file", prompt_.string()});
    EXPECT_EQ(twice.status, 2);
    EXPECT_NE(twice.err.find("--skill: given twice"), std::string::npos) << twice.err;
    const auto unknown = runner(kQuietAgent, {"--turbo", "1"});
    EXPECT_EQ(unknown.status, 2);
    EXPECT_NE(unknown.err.find("--turbo"), std::string::npos);
    // Control: the same runner with good options runs the agent.
    EXPECT_EQ(runner(kQuietAgent).status, 0);
}

TEST_F(SkillRunner, TheSkillIsInstalledInTheHomeAndTheAgentGetsItsCommandLine) {
    const auto out = runner(
        "cat >/dev/null\n"
        "printf '{\"skill\":%s,\"args\":\"%s\"}\\n' \"$(wc -c "
        "<\"$HOME/.claude/skills/notes/SKILL.md\")\" "
        "\"$*\"\n",
        {"--skill", skill_.string(), "--prompt-file", prompt_.string(), "--max-turns", "3", "--",
         "--allowedTools", "Write"});
    EXPECT_EQ(out.status, 0) << out.err;
    EXPECT_EQ(read_file(transcript_.string()),
              "{\"skill\":33,\"args\":\"-p --output-format stream-json --verbose --max-turns 3 "
              "--allowedTools Write\"}\n");
}

TEST_F(SkillRunner, ASkillWithALinkOutIsRefusedBeforeTheAgentStarts) {
    write_file((dir_ / "grading.txt").string(), "the answers");
    fs::create_symlink(dir_ / "grading.txt", skill_ / "answers.txt");
    const auto started = dir_ / "agent-started";
    const auto out = runner("touch " + started.string() + "\n" + kQuietAgent);
    EXPECT_EQ(out.status, 2);
    EXPECT_NE(out.err.find("answers.txt"), std::string::npos) << out.err;
    EXPECT_FALSE(fs::exists(started));
    EXPECT_FALSE(fs::exists(home_ / ".claude/skills/notes"));
    // Control: without the link the same skill is installed and the agent runs.
    fs::remove(skill_ / "answers.txt");
    EXPECT_EQ(runner("touch " + started.string() + "\n" + kQuietAgent).status, 0);
    EXPECT_TRUE(fs::exists(started));
}

TEST_F(SkillRunner, APromptOverTheCapIsRefusedAndOneAtTheCapIsHandedOnWhole) {
    const std::size_t cap = 256 * 1024;
    write_file(prompt_.string(), std::string(cap + 1, 'p'));
    const auto counted = "printf '{\"prompt\":%s}\\n' \"$(wc -c)\"\n";
    const auto huge = runner(counted);
    EXPECT_EQ(huge.status, 2);
    EXPECT_NE(huge.err.find(prompt_.string()), std::string::npos) << huge.err;
    EXPECT_NE(huge.err.find("larger than 262144 bytes"), std::string::npos) << huge.err;
    write_file(prompt_.string(), std::string(cap, 'p'));
    const auto whole = runner(counted);
    EXPECT_EQ(whole.status, 0) << whole.err;
    EXPECT_EQ(read_file(transcript_.string()), "{\"prompt\":262144}\n");
}

TEST_F(SkillRunner, ThePromptMayComeFromStdin) {
    const auto out =
        run({"/bin/sh", "-c",
             "printf 'from stdin' | \"$0\" --agent claude --agent-bin \"$1\" "
             "--transcript \"$2\"",
             TEA_SKILL_RUNNER_BIN, agent("printf '{\"prompt\":\"%s\"}\\n' \"$(cat)\"\n"),
             transcript_.string()},
            env());
    EXPECT_EQ(out.status, 0) << out.err;
    EXPECT_EQ(read_file(transcript_.string()), "{\"prompt\":\"from stdin\"}\n");
}

TEST_F(SkillRunner, TheAgentGetsOnlyTheAllowedVariables) {
    const auto dump = dir_ / "agent-env";
    const auto out = runner("env >" + dump.string() + "\n" + kQuietAgent);
    EXPECT_EQ(out.status, 0) << out.err;
    const auto seen = read_file(dump.string());
    EXPECT_EQ(seen.find("EVALUATION_SECRET"), std::string::npos) << seen;
    // Control: the listed variables of the same caller reach it.
    EXPECT_NE(seen.find("CLAUDE_CODE_OAUTH_TOKEN=token-for-the-agent"), std::string::npos) << seen;
    EXPECT_NE(seen.find("HOME=" + home_.string()), std::string::npos) << seen;
}

TEST_F(SkillRunner, ATranscriptThatIsNotJsonLinesExits5AndIsKept) {
    const auto out = runner("cat >/dev/null\necho '{\"type\":\"system\"}'\necho 'Error: oops'\n");
    EXPECT_EQ(out.status, 5);
    EXPECT_NE(out.err.find("transcript not JSON lines (1 of 2 lines)"), std::string::npos)
        << out.err;
    EXPECT_EQ(read_file(transcript_.string()), "{\"type\":\"system\"}\nError: oops\n");
    // Control: the same agent printing JSON alone is done.
    EXPECT_EQ(runner(kQuietAgent).status, 0);
}

TEST_F(SkillRunner, BytesThatAreNotUtf8AndALineOver16MiBAreCountedNotACrash) {
    const auto out = runner(
        "cat >/dev/null\nprintf '\\377\\376\\n'\nhead -c 20000000 /dev/zero | tr '\\0' a\n"
        "echo\necho '{\"type\":\"result\",\"is_error\":false}'\n");
    EXPECT_EQ(out.status, 5);
    EXPECT_NE(out.err.find("(2 of 3 lines)"), std::string::npos) << out.err;
    EXPECT_EQ(fs::file_size(transcript_), 3U + 20'000'001U + 35U);
}

TEST_F(SkillRunner, AnAgentThatFailsExits5) {
    EXPECT_EQ(runner("cat >/dev/null\nexit 3\n").status, 5);
    EXPECT_EQ(runner("cat >/dev/null\necho '{\"type\":\"result\",\"is_error\":true}'\n").status, 5);
    const auto missing = run({TEA_SKILL_RUNNER_BIN, "--agent", "claude", "--agent-bin",
                              (dir_ / "no-such-agent").string(), "--prompt-file", prompt_.string(),
                              "--transcript", transcript_.string()},
                             env());
    EXPECT_EQ(missing.status, 5);
    EXPECT_NE(missing.err.find("no-such-agent"), std::string::npos) << missing.err;
}

TEST_F(SkillRunner, ALoginFailureExits4AndATurnBudgetExits6) {
    const auto no_login = runner(
        "cat >/dev/null\n"
        "echo '{\"type\":\"assistant\",\"error\":\"authentication_failed\"}'\n"
        "echo '{\"type\":\"result\",\"is_error\":true,\"result\":\"Not logged in\"}'\nexit 1\n");
    EXPECT_EQ(no_login.status, 4);
    EXPECT_NE(no_login.err.find("could not authenticate: Not logged in"), std::string::npos)
        << no_login.err;
    const auto turns = runner(
        "cat >/dev/null\n"
        "echo '{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":true}'\nexit 1\n");
    EXPECT_EQ(turns.status, 6);
}

bool alive(pid_t pid) {
    // A zombie has ended: its state in /proc/<pid>/stat is Z.
    const auto stat = "/proc/" + std::to_string(pid) + "/stat";
    if (!fs::exists(stat)) {
        return false;
    }
    const auto text = read_file(stat);
    const auto close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

TEST_F(SkillRunner, AnAgentThatNeverExitsIsKilledWithWhatItStartedAndExits6) {
    const auto pids = dir_ / "pids";
    const auto body = "cat >/dev/null\nsleep 1000 &\necho $$ $! >" + pids.string() +
                      "\necho '{\"type\":\"system\"}'\nwait\n";
    const auto started = std::chrono::steady_clock::now();
    const auto out = runner(body, {"--prompt-file", prompt_.string(), "--max-seconds", "1"});
    EXPECT_EQ(out.status, 6) << out.err;
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds{10});
    EXPECT_NE(out.err.find("time budget"), std::string::npos) << out.err;
    EXPECT_EQ(read_file(transcript_.string()), "{\"type\":\"system\"}\n");
    pid_t agent_pid = 0;
    pid_t child_pid = 0;
    std::istringstream{read_file(pids.string())} >> agent_pid >> child_pid;
    ASSERT_GT(child_pid, 0);
    EXPECT_FALSE(alive(agent_pid));
    EXPECT_FALSE(alive(child_pid));
}

TEST_F(SkillRunner, WhatAnAgentLeftRunningEndsWithItEvenOutsideItsGroup) {
    // The agent exits at once; one child would sleep on in its group, another in a session of
    // its own (setsid), out of reach of the group's kill.
    const auto pids = dir_ / "pids";
    const auto out = runner("cat >/dev/null\nsleep 1000 >/dev/null 2>&1 &\necho $! >" +
                            pids.string() + "\nsetsid sleep 1000 >/dev/null 2>&1 &\necho $! >>" +
                            pids.string() + "\nsleep 0.2\n" + kQuietAgent);
    EXPECT_EQ(out.status, 0) << out.err;
    std::istringstream listed{read_file(pids.string())};
    int seen = 0;
    for (pid_t pid = 0; listed >> pid; ++seen) {
        EXPECT_FALSE(alive(pid)) << pid;
    }
    EXPECT_EQ(seen, 2);
    // Control: the same agent run without the runner leaves both running.
    const auto bare = run({(dir_ / "agent").string()}, env());
    EXPECT_EQ(bare.status, 0) << bare.err;
    std::istringstream left{read_file(pids.string())};
    for (pid_t pid = 0; left >> pid;) {
        EXPECT_TRUE(alive(pid)) << pid;
        ::kill(pid, SIGKILL);
    }
}

TEST_F(SkillRunner, SigtermIsPassedToTheAgent) {
    const auto got = dir_ / "agent-got-term";
    const auto body = "trap 'touch " + got.string() +
                      "; exit 143' TERM\ncat >/dev/null\n"
                      "echo '{\"type\":\"system\"}'\nwhile :; do sleep 0.05; done\n";
    const auto out =
        run({"/bin/sh", "-c",
             "\"$0\" --agent claude --agent-bin \"$1\" --prompt-file \"$2\" "
             "--transcript \"$3\" & pid=$!\n"
             "while [ ! -s \"$3\" ]; do sleep 0.05; done\n"
             "kill -TERM $pid; wait $pid; echo \"runner: $?\"",
             TEA_SKILL_RUNNER_BIN, agent(body), prompt_.string(), transcript_.string()},
            env());
    EXPECT_NE(out.out.find("runner: 5"), std::string::npos) << out.out << out.err;
    EXPECT_TRUE(fs::exists(got));
}

}  // namespace
}  // namespace tea::test
