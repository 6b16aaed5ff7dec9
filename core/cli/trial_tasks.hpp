// run --jobs N: each trial made by a task of its own, a child of the run started as
// `tea-evaluate ... run EVAL_DIR --trial-task RUN_ID:N` (evaluation/trial_task.hpp). The run
// begins and finishes as in one process; in between its tasks make the trials, up to N at once,
// and each hands back its trial's outcome in the run's records, which the run checks and merges
// in the order of the trials. A task that ends without a whole outcome makes its trial an
// infrastructure error of the run (run.json's failedTrialTasks), never a verdict.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "evaluation/trials.hpp"

namespace tea::cli {

// The task's side: one trial of the run the spec names. Exit 0 with the outcome written, 128+N
// when interrupted by signal N, or the runtime's exit code for what stopped it.
int trial_task_command(const CommonOptions &common, const RunCommandOptions &options);

// How a trial's task ended, as its executor saw it.
struct TrialTaskEnd {
    bool started = false;
    int status = 0;            // the task's exit status, 128+N for signal N; -1 when unknown
    std::string how;           // "exit status 1", "killed by signal 9", "Slurm state TIMEOUT"
    bool interrupted = false;  // ended by a signal (the run's own, when state.interrupted)
    bool never_ran = false;    // cancelled before it started (a Slurm array pending too long)
};

// Each task's outcome (by trial, from 1) read back, checked and merged in the order of the
// trials; a task without a whole one is named in failedTrialTasks, unless the run was
// interrupted and it ended by the signal.
void merge_trial_outcomes(evaluation::RunState &state, const std::vector<TrialTaskEnd> &ends);

// The trials (from 1) whose task ended with no outcome the run would merge (killed, cancelled,
// its trial.json missing or torn), each recorded in run.json's retriedTrialTasks with why: what a
// retry makes again. None when the run was interrupted, nor one whose task never ran. A trial with
// a verdict, or interrupted in its evaluator (its calls already count), is never made again.
std::vector<int> trials_to_retry(evaluation::RunState &state,
                                 const std::vector<TrialTaskEnd> &ends);

// How an executor's tasks of `trials` (from 1) ended, in the order of `trials`.
using TrialTasks = std::function<std::vector<TrialTaskEnd>(const std::vector<int> &trials)>;

// Every trial of the run made by `tasks`, then, `retries` being 1, each trial of trials_to_retry
// once more; the outcomes merged.
void make_trials(evaluation::RunState &state, int retries, const TrialTasks &tasks);

// The run's side, between begin_run and finish_run: every trial's task, up to `jobs` at once,
// with `argv` (this process's command line), and once more, `retries` being 1, each trial of
// trials_to_retry; the outcomes merged into `state`. A signal that would end the run is
// forwarded to every task (state.interrupted).
void run_trial_tasks(evaluation::RunState &state, const std::vector<std::string> &argv, int jobs,
                     int retries);

}  // namespace tea::cli
