// docs/evaluation-format.md as a newcomer uses it: the first evaluation the page shows, written
// from the page's own blocks, passes check, run and score with the page's commands; the page's
// example of every field passes check; and the evaluator receives, and is judged by, what the page
// says. Real bubblewrap, strace and git, and the tea-evaluate binary.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "docs/marked_blocks.hpp"
#include "docs/shell_session.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kPage = fs::path{TEA_SOURCE_DIR} / "docs" / "evaluation-format.md";

// The text of the page's block marked `<!-- test: MARKER -->`.
std::string block_marked(const std::vector<test::FencedBlock> &blocks, const std::string &marker) {
    for (const auto &block : blocks) {
        if (block.marker == marker) {
            return block.text;
        }
    }
    ADD_FAILURE() << "evaluation-format.md has no block marked 'test: " << marker << "'";
    return {};
}

// The page's first evaluation, written from its `file` blocks into a folder `greeter` of a fresh
// home, with the binary first on PATH.
class Greeter {
   public:
    Greeter() {
        fs::create_directories(project_);
        fs::permissions(base_.path() / "home", fs::perms::owner_all);
        const char *path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): no thread yet
        env_ = test::fresh_user_environment(base_ / "home", base_ / "private",
                                            fs::path{TEA_EVALUATE_BIN}.parent_path().string() +
                                                ":" + (path != nullptr ? path : "/usr/bin:/bin"));
        for (const auto &block : blocks_) {
            if (block.marker.starts_with("file ")) {
                write(block.marker.substr(5), block.text);
            }
        }
    }

    void write(const std::string &rel, const std::string &content) const {
        fs::create_directories((project_ / rel).parent_path());
        test::write_file((project_ / rel).string(), content);
    }
    // The page's commands, and the outputs it shows after them.
    [[nodiscard]] test::SessionResult run_page_commands() const {
        return test::run_page(kPage, blocks_, project_, env_);
    }
    [[nodiscard]] test::Outcome sh(const std::string &script) const {
        return test::run({"/bin/bash", "-c", "cd \"$0\" && " + script, project_.string()}, env_);
    }
    // A run, then the score of its records: the score's outcome.
    [[nodiscard]] test::Outcome run_and_score() const {
        const auto run = sh("tea-evaluate --json run .tea");
        EXPECT_EQ(run.status, 0) << run.err;
        const auto doc = json::parse(run.out, nullptr, false);
        if (!doc.is_object() || !doc.contains("runDir")) {
            ADD_FAILURE() << "run printed no runDir: " << run.out << run.err;
            return {};
        }
        return sh("tea-evaluate score " + doc["runDir"].get<std::string>());
    }

    [[nodiscard]] const std::vector<test::FencedBlock> &blocks() const { return blocks_; }
    [[nodiscard]] const fs::path &project() const { return project_; }

   private:
    test::TempDir base_{"tea-doc-evaluation", fs::perms{0755}};
    fs::path project_ = base_ / "home" / "greeter";
    std::vector<test::FencedBlock> blocks_ = test::fenced_blocks(kPage);
    std::vector<std::string> env_;
};

TEST(EvaluationFormat, TheFirstEvaluationPassesCheckRunAndScoreWithThePagesCommands) {
    const Greeter greeter;
    const auto session = greeter.run_page_commands();
    ASSERT_EQ(session.status, 0) << "a command of the page failed at " << session.failed_block;
    for (const auto &problem : test::outputs_not_shown(kPage, greeter.blocks(), session)) {
        ADD_FAILURE() << problem;
    }

    // The control: the same evaluation grades a target that answers otherwise as a fail, with
    // the evaluator's reason, so its pass above was earned.
    const auto wrong = greeter.sh(
        "sed -i 's/Hello, /Hi, /' bin/greet && git commit -q -am 'greet says hi' && "
        "tea-evaluate --json run .tea");
    ASSERT_EQ(wrong.status, 0) << wrong.err;
    const auto run_dir = json::parse(wrong.out)["runDir"].get<std::string>();
    const auto score = greeter.sh("tea-evaluate score " + run_dir);
    EXPECT_EQ(score.status, 1) << score.err;
    EXPECT_NE(score.err.find("FAIL"), std::string::npos) << score.err;
    EXPECT_NE(score.err.find("hello: printed 'Hi, Ada!', expected 'Hello, Ada!'"),
              std::string::npos)
        << score.err;
}

TEST(EvaluationFormat, TheExampleOfEveryFieldPassesCheck) {
    const Greeter greeter;
    int written = 0;
    for (const auto &block : greeter.blocks()) {
        if (block.marker.starts_with("checked ")) {
            greeter.write(block.marker.substr(8), block.text);
            ++written;
        }
    }
    ASSERT_EQ(written, 2);
    const auto check = greeter.sh(
        "chmod +x bin/greet .tea/evaluator/grade.py && "
        "tea-evaluate check .tea");
    EXPECT_EQ(check.status, 0) << check.err;
    EXPECT_EQ(check.out, "ok: 1 entries, 2 probes, 3 trials, confinement on\n");
}

// An evaluator that checks each promise of the page's "How it runs" and "What it receives", and
// fails the trial naming each one broken.
constexpr const char *kContractGrader = R"(#!/usr/bin/python3
import json, os, pathlib, sys
reasons = []
env = os.environ
names = ["TEA_TRIAL_DIR", "TEA_TRIAL_INDEX", "TEA_RUN_DIR", "TEA_RUN_ID", "TEA_EVALUATION_DIR"]
reasons += [name + " is not set" for name in names if name not in env]
if not reasons:
    trial = pathlib.Path(env["TEA_TRIAL_DIR"])
    run = pathlib.Path(env["TEA_RUN_DIR"])
    evaluation = pathlib.Path(env["TEA_EVALUATION_DIR"])
    index = int(env["TEA_TRIAL_INDEX"])
    if not all(p.is_absolute() for p in (trial, run, evaluation)):
        reasons.append("a path is relative")
    if run != evaluation / "runs" / env["TEA_RUN_ID"] or trial != run / "trials" / str(index):
        reasons.append(f"the records are not at EVAL_DIR/runs/<run-id>/trials/<i>: {trial}")
    calls = sorted(p.name for p in (trial / "calls").iterdir())
    if calls != ["01-hello.json", "01-hello.stderr", "01-hello.stdout",
                 "02-shout.json", "02-shout.stderr", "02-shout.stdout"]:
        reasons.append(f"calls/ holds {calls}")
    record = json.loads((trial / "calls" / "02-shout.json").read_text())
    if (record["probe"], record["entry"], record["args"], record["status"], record["stdout"]) != (
            "shout", "greeter", ["shout"], 0, "calls/02-shout.stdout"):
        reasons.append(f"the call's record is {record}")
    if (trial / "artifacts" / "greeter" / "greeting").read_text() != "Hello, Ada!\n":
        reasons.append("the artifact is not at artifacts/<entry>/<name>")
    if (trial / "verdict.json").exists() or not (trial / "evaluator.stdout").exists():
        reasons.append("verdict.json is there before the evaluator ends, or evaluator.stdout is not")
    before = [t["index"] for t in json.loads((run / "run.json").read_text())["trials"]]
    if before != list(range(1, index)):
        reasons.append(f"run.json holds trials {before} while trial {index} is graded")
    cwd = pathlib.Path.cwd()
    if cwd == evaluation or any(cwd.iterdir()):
        reasons.append(f"the working directory {cwd} is not a fresh, empty one")
    if sys.stdin.read() != "":
        reasons.append("stdin is not empty")
    for place in (trial, evaluation):
        try:
            (place / "planted").write_text("x")
            reasons.append(f"{place} is writable")
        except OSError:
            pass
print("the contract holds" if not reasons else "\n".join(reasons), file=sys.stderr)
print(json.dumps({"verdict": "fail" if reasons else "pass", "reasons": reasons}))
)";

TEST(EvaluationFormat, TheEvaluatorReceivesWhatThePageSays) {
    const Greeter greeter;
    greeter.write(".tea/evaluator/grade.py", kContractGrader);
    const auto commit = greeter.sh(
        "chmod +x bin/greet .tea/evaluator/grade.py && git init -q && git add -A && "
        "git commit -q -m greet");
    ASSERT_EQ(commit.status, 0) << commit.err;
    const auto score = greeter.run_and_score();
    EXPECT_EQ(score.status, 0) << score.err;
    EXPECT_NE(score.err.find("PASS"), std::string::npos) << score.err;
}

// What the page says the answer and the exit status mean, each through the real run and score.
// The evaluator is read where it is: each case changes it without a commit.
TEST(EvaluationFormat, TheAnswerAndTheExitStatusMeanWhatThePageSays) {
    const Greeter greeter;
    const auto commit = greeter.sh(
        "chmod +x bin/greet .tea/evaluator/grade.py && git init -q && git add -A && "
        "git commit -q -m greet");
    ASSERT_EQ(commit.status, 0) << commit.err;
    const auto grader = [&](const std::string &body) {
        greeter.write(".tea/evaluator/grade.py", "#!/bin/sh\n" + body);
    };
    const auto answer = block_marked(greeter.blocks(), "answer");

    // The page's example answer is a fail, with its reason.
    test::write_file((greeter.project() / ".tea" / "evaluator" / "answer.json").string(), answer);
    grader("cat \"$TEA_EVALUATION_DIR/evaluator/answer.json\"\n");
    auto score = greeter.run_and_score();
    EXPECT_EQ(score.status, 1) << score.err;
    const auto reason = json::parse(answer)["reasons"][0].get<std::string>();
    EXPECT_NE(score.err.find(reason), std::string::npos) << score.err;

    // Logs on stderr leave the answer valid; a log line on stdout makes it no answer.
    grader("echo grading >&2\necho '{\"verdict\": \"pass\"}'\n");
    score = greeter.run_and_score();
    EXPECT_EQ(score.status, 0) << score.err;
    grader("echo grading\necho '{\"verdict\": \"pass\"}'\n");
    score = greeter.run_and_score();
    EXPECT_EQ(score.status, 3) << score.err;
    EXPECT_NE(score.err.find("the evaluator's stdout is not"), std::string::npos) << score.err;

    // A valid answer with a status other than 0 is an error, never a verdict.
    grader("echo '{\"verdict\": \"pass\"}'\nexit 1\n");
    score = greeter.run_and_score();
    EXPECT_EQ(score.status, 3) << score.err;
    EXPECT_NE(score.err.find("trial 1: the evaluator gave no verdict: the evaluator exited with "
                             "status 1"),
              std::string::npos)
        << score.err;
}

}  // namespace
}  // namespace tea
