// The subcommands of tea-evaluate. Each returns the process exit status.
#pragma once

#include <filesystem>
#include <string>

#include "cli/call.hpp"
#include "cli/runtime.hpp"
#include "evaluation/evaluation.hpp"

namespace tea::cli {

struct ExecOptions : CallOptions {
    bool strict = false;  // exit 3 when the audit lists a path (or could not see everything)
};

struct PreflightOptions : CallOptions {
    int legs = 2;  // pristine-workspace legs, each with a new home
};

struct RunCommandOptions {
    std::filesystem::path evaluation;  // EVAL_DIR
};

struct ScoreOptions {
    std::filesystem::path run_dir;  // EVAL_DIR/runs/<run-id>
};

int exec_command(const CommonOptions &common, const ExecOptions &options);
int run_command(const CommonOptions &common, const RunCommandOptions &options);
// preflight EVAL_DIR: every probe's call on pristine workspaces, in `legs` legs.
int preflight_evaluation(const CommonOptions &common, const std::filesystem::path &folder,
                         int legs);
int score_command(const CommonOptions &common, const ScoreOptions &options);
int preflight_command(const CommonOptions &common, const PreflightOptions &options);
int plugins_command(const CommonOptions &common);
// Loads and checks the evaluation folder; starts nothing and loads no plugin. Exit 0, or 2 with
// every problem named.
// One escaped line per problem of an evaluation, on stderr.
void print_problems(const std::vector<evaluation::Problem> &problems);
int check_command(const CommonOptions &common, const std::string &eval_dir);

// A path as one line of a human list: control bytes and backslashes escaped (\xNN), so a
// hostile file name cannot forge lines of the report.
std::string printable(const std::string &path);

// The egress route's refusals of a call, one escaped line each, on stderr (nothing when none).
void print_egress_refusals(const std::string &records_json);

// The audit's list in human form, on stderr: what was listed, or why nothing can be said.
void print_audit(const audit::AuditResult &audit);

}  // namespace tea::cli
