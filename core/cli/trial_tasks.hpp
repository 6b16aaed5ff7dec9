// run --jobs N: each trial made by a task of its own, a child of the run started as
// `tea-evaluate ... run EVAL_DIR --trial-task RUN_ID:N` (evaluation/trial_task.hpp). The run
// begins and finishes as in one process; in between its tasks make the trials, up to N at once,
// and each hands back its trial's outcome in the run's records, which the run checks and merges
// in the order of the trials. A task that ends without a whole outcome makes its trial an
// infrastructure error of the run (run.json's failedTrialTasks), never a verdict.
#pragma once

#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "evaluation/trials.hpp"

namespace tea::cli {

// The task's side: one trial of the run the spec names. Exit 0 with the outcome written, 128+N
// when interrupted by signal N, or the runtime's exit code for what stopped it.
int trial_task_command(const CommonOptions &common, const RunCommandOptions &options);

// The run's side, between begin_run and finish_run: every trial's task, up to `jobs` at once,
// with `argv` (this process's command line); the outcomes merged into `state`. A signal that
// would end the run is forwarded to every task (state.interrupted).
void run_trial_tasks(evaluation::RunState &state, const std::vector<std::string> &argv, int jobs);

}  // namespace tea::cli
