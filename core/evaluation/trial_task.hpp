// A trial made by a process of its own (a task of `run --jobs N`, or of an executor's job array:
// docs/scale-out.md) for a run that another process, the coordinator, began and will finish. The
// task opens the evaluation and a session of its own, adopts the run from its run.json, makes one
// trial as run_trial does, and writes what the trial adds to the run in
// trials/N/trial.json (trial_outcome, trials.hpp), which the coordinator reads back, checks and
// merges. docs/records.md describes the file.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "evaluation/trials.hpp"
#include "files/private_dirs.hpp"

namespace tea::evaluation {

// The task's description on its command line: "RUN_ID:N".
std::string trial_task_spec(const std::string &run_id, int index);
// The run id and index of a spec; throws tea::Error (exit 2) for one that is not a run id of
// new_run_id's form and an index from 1.
std::pair<std::string, int> parse_trial_task_spec(const std::string &spec);

// trials/N/trial.json of the run's records.
std::filesystem::path trial_outcome_file(const std::filesystem::path &records, int index);

// Makes `state` (opened on the evaluation, with the spec's run id) the run that `run` (its
// run.json, as the coordinator wrote it when it began) describes, for trial `index`: the records
// folder must be a folder of the evaluation's runs/ (not a link), and run.json must name this run
// as running, of this evaluation's trial count, arm "run", at the commit this process resolved.
// Then what begin_run settled for the run is settled again in this process: the budgets, the
// trials' file system, the probes' revisions, and the run's canary, read back (leak_detectors.hpp).
// Throws tea::Error: exit 2 for a run that does not match, 12 for what the host cannot give.
void adopt_run(RunState &state, const nlohmann::json &run, int index,
               files::RunDirectory &private_dir);

// Writes a trial's outcome to trial_outcome_file, atomically and redacted (write_record).
void write_trial_outcome(const RunState &state, const nlohmann::json &outcome);

// Throws std::invalid_argument saying what is wrong when `outcome` is not a whole outcome of
// trial `index` of run `run_id` in trial_outcome's shape: a task that lies, or a file torn or
// altered, is never merged.
void check_trial_outcome(const nlohmann::json &outcome, const std::string &run_id, int index);

// What a trial interrupted in its calls (trial_outcome gave none) hands back in place of an
// outcome: the egress refusals and failed services of the calls it finished, which a run made in
// one process keeps in its lists too. Written with write_trial_outcome.
nlohmann::json interrupted_calls_outcome(const RunState &state, int index);

// Whether `outcome` is a whole interrupted_calls_outcome of trial `index` of run `run_id`: its
// lists hold only items of this trial, each with the fields the run's summary reads.
bool is_interrupted_calls_outcome(const nlohmann::json &outcome, const std::string &run_id,
                                  int index);

// When `outcome` is a whole interrupted_calls_outcome of trial `index` of the run, its lists are
// added to the run's (as merge_trial adds an outcome's) and true is returned; false otherwise,
// with nothing added: a task that lies adds nothing.
bool merge_interrupted_calls(RunState &state, const nlohmann::json &outcome, int index);

// What the run does with a trial's outcome as read back.
struct OutcomeDecision {
    bool merge = false;  // the outcome is merged: its calls count in the run
    std::string failed;  // why its trial is an infrastructure error of the run; empty: it is not
};

// The outcomes of a run's tasks, decided one by one in the order of the trials: an outcome is
// merged only when whole (check_trial_outcome) and made under the confinement and observer of
// the first merged; a trial whose outcome is not merged, or that was interrupted in its evaluator
// while the run was not, is an infrastructure error.
class TrialOutcomes {
   public:
    explicit TrialOutcomes(std::string run_id) : run_id_(std::move(run_id)) {}
    // `outcome`: trial `index`'s trial.json as read, null when unreadable (`unread` says why).
    OutcomeDecision decide(const nlohmann::json &outcome, const std::string &unread, int index,
                           bool run_interrupted);

   private:
    std::string run_id_;
    std::optional<std::pair<nlohmann::json, nlohmann::json>> made_under_;
};

}  // namespace tea::evaluation
