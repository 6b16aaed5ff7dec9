// The subcommands of tea-evaluate. Each returns the process exit status.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "call/launch.hpp"
#include "cli/runtime.hpp"
#include "evaluation/evaluation.hpp"
#include "evaluation/trials.hpp"
#include "git/workspace_source.hpp"

namespace tea::cli {

struct ExecOptions : call::CallOptions {
    bool strict = false;  // exit 3 when the audit lists a path (or could not see everything)
    std::optional<std::string> login;  // --login NAME: the login adapter that grants the call
};

struct PreflightOptions : call::CallOptions {
    int legs = 2;  // pristine-workspace legs, each with a new home
};

struct RunCommandOptions {
    std::filesystem::path evaluation;  // EVAL_DIR
    // Trials at once (--jobs; [executor] jobs otherwise); above 1, each a task of its own.
    std::optional<int> jobs;
    // What makes the trials (--executor; [executor] kind otherwise): "local" or "slurm".
    std::optional<std::string> executor;
    // Internal (--trial-task, hidden): this process is the task of one trial ("RUN_ID:N") of a
    // run begun by the run that started it (cli/trial_tasks.hpp).
    std::optional<std::string> trial_task;
    // Internal (--node-check, hidden): this process checks, on a node, that it can make the
    // trials of run RUN_ID (cli/node_check.hpp).
    std::optional<std::string> node_check;
    std::vector<std::string> argv;  // the command line, for the tasks' own
};

struct ScoreOptions {
    std::filesystem::path run_dir;  // EVAL_DIR/runs/<run-id>; EVAL_DIR or its runs/: the latest
};

struct ReportOptions {
    std::filesystem::path run_dir;  // as score's, or a qualification's folder (runs/qualify-ID)
    std::optional<std::filesystem::path> output;  // -o FILE; default RUN_DIR/report.html
};

struct QualifyOptions {
    std::filesystem::path evaluation;  // EVAL_DIR
    int jobs = 1;                      // arms at once; above 1, each in a process of its own
    // Internal (--arm, hidden): this process is one arm of a qualify --jobs that started it
    // ("baseline", "repass" or "mutated:NAME"); its result goes to stdout as JSON.
    std::optional<std::string> arm;
    std::vector<std::string> argv;  // the command line, for the arms' own
};

// An evaluation loaded, its source found and its session opened; nullopt (its problems printed)
// when the folder is malformed.
struct OpenedEvaluation {
    evaluation::Evaluation ev;
    std::unique_ptr<call::CallSession> session;
    git::WorkspaceSource source;
    call::Logins logins;  // granted before any target starts
};
std::optional<OpenedEvaluation> open_evaluation(const CommonOptions &common,
                                                const std::filesystem::path &folder);

// The progress lines of run and preflight on stderr (rewritten in place on a terminal, unless
// `plain`: a trial task's, whose lines share the terminal with other tasks').
std::unique_ptr<evaluation::TrialProgress> progress_lines(bool quiet, bool plain = false);

int exec_command(const CommonOptions &common, const ExecOptions &options);
int run_command(const CommonOptions &common, const RunCommandOptions &options);
int score_command(const CommonOptions &common, const ScoreOptions &options);
int report_command(const CommonOptions &common, const ReportOptions &options);
int qualify_command(const CommonOptions &common, const QualifyOptions &options);
int preflight_command(const CommonOptions &common, const PreflightOptions &options);
int plugins_command(const CommonOptions &common);
// Loads and checks the evaluation folder; starts nothing and loads no plugin. Exit 0, or 2 with
// every problem named.
int check_command(const CommonOptions &common, const std::string &eval_dir);

}  // namespace tea::cli
