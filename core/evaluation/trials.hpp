// The trials of an evaluation (run) and the legs of its preflight: for each trial a fresh
// workspace (the evaluated commit) and a fresh private home; each probe's call of its entry
// confined and audited through the call session (call/session.hpp); the artifacts copied out of
// the hostile workspace; then the evaluator, outside the target's confinement. The records
// (run.json, the trials' call records and verdicts, the isolation manifest) go to
// EVAL_DIR/runs/<run-id>/, each written atomically. docs/records.md describes them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "call/logins.hpp"
#include "call/session.hpp"
#include "config/config.hpp"
#include "evaluation/evaluation.hpp"
#include "evaluation/run_records.hpp"
#include "exec/call_cgroup.hpp"
#include "files/private_dirs.hpp"
#include "files/trial_disk.hpp"
#include "git/workspace_source.hpp"

namespace tea::evaluation {

class RunLeakDetectors;

// What the trials tell the user as they go; the command draws it.
class TrialProgress {
   public:
    TrialProgress() = default;
    TrialProgress(const TrialProgress &) = delete;
    TrialProgress &operator=(const TrialProgress &) = delete;
    virtual ~TrialProgress() = default;
    // A call or the evaluator starts (`what`: the trial, the probe, the entry), and ends.
    virtual void start(const std::string &what) = 0;
    virtual void finish(const std::string &outcome) = 0;
    // The egress route's records of the call that just ended.
    virtual void refusals(const nlohmann::json &egress_records) = 0;
    // The evaluator gave no verdict: why, and the file that holds what it wrote on stderr.
    virtual void evaluator_error(const std::string &why,
                                 const std::filesystem::path &stderr_file) = 0;
};

struct RunState {
    RunState(const Evaluation &evaluation, call::CallSession &calls, git::WorkspaceSource from,
             std::string id)
        : ev(evaluation), session(calls), source(std::move(from)), run_id(std::move(id)) {}

    const Evaluation &ev;
    call::CallSession &session;
    git::WorkspaceSource source;
    std::string run_id;
    std::filesystem::path records;                  // EVAL_DIR/runs/<run-id>
    nlohmann::json run;                             // run.json as it grows
    std::map<std::string, std::set<int>> observed;  // path -> trials that reached it
    std::map<std::string, std::string> observed_reason;
    std::vector<int> lossy;
    nlohmann::json egress_refusals = nlohmann::json::array();
    // Each http probe whose service never got its request: run.json's servicesFailed.
    nlohmann::json services_failed = nlohmann::json::array();
    int interrupted = 0;
    std::string confinement;
    exec::Budget budget;                  // the configuration's, for what the evaluation leaves
    std::optional<files::DiskKind> disk;  // a trial's file system; none: the private root's disk
    std::uint64_t disk_bytes = 0;
    std::set<int> budget_trials;  // trials a budget stopped something in
    std::string disk_reason;      // why the trials have no file system of their own
    // A historical probe's revision -> the commit it names, resolved before any target starts.
    std::map<std::string, std::string> revisions;
    // The grants of the entries that declare a login, and the secrets no record may hold: every
    // record of the run is written through it (write_record).
    call::Logins logins;
    // qualify's arms (qualification.hpp): which arm the run is ("run" for run's own), the
    // mutation a mutated arm carries, and what writes it into each trial's fresh workspace
    // before the trial's first call.
    std::string condition_arm = "run";
    std::string mutation;
    std::function<void(const std::filesystem::path &workspace)> mutate;
    // Made by begin_run: the host-unchanged manifests and the run's canary (leak_detectors.hpp).
    std::shared_ptr<RunLeakDetectors> detectors;
    // The observer of the trials' calls when they were made by other processes (trial tasks),
    // as their outcomes name it: this process's session selected none.
    std::string trials_observer;
    // run.json's "executor": what made the trials (the local machine, one at a time, unless
    // run --jobs or an executor says otherwise).
    nlohmann::json executor = {{"kind", "local"}, {"jobs", 1}};
};

// What a trial's (or a preflight leg's) calls did.
struct Calls {
    nlohmann::json records = nlohmann::json::array();
    std::set<std::string> observed;
    std::map<std::string, std::string> reasons;
    bool lossy = false;
    bool audited_all = true;
    std::vector<std::string> lossy_reasons;
    std::set<std::string> entries;
    int made = 0;       // calls made
    int truncated = 0;  // of which left host sockets reachable
    std::set<std::string> sockets_left_reachable;
    int infrastructure_errors = 0;
    int interrupted = 0;
    nlohmann::json budget_hits = nlohmann::json::array();  // each call's, with its probe and entry
};

// A new run's id: the time in UTC to the microsecond and a random part
// (20260101T120000.123456Z-a1b2c3). Ids sort by start time.
std::string new_run_id();

// The time now in UTC as the records write it: 2026-01-01T12:00:00Z.
std::string utc_now();

// run.json's weakened, as sentences: "observer none audited no call".
std::vector<std::string> weakened_sentences(const nlohmann::json &weakened);

void save_run(RunState &state);

// The evaluation's source (its git directory and evaluated commit, or a copy). Exit 2 when it
// cannot be read.
git::WorkspaceSource open_source(const Evaluation &ev);

// The grants of the evaluation's logins (login_asks.hpp: the entries', the rubric judge's, each
// sealed-brief agent's, each under a name of its own), asked of each adapter before any target
// starts. Exit 2 for an adapter that is not installed, 12 for one that cannot grant (a confined
// entry with no route, a backend that cannot show a target's files).
call::Logins grant_logins(const Evaluation &ev, const call::CallSession &session);

// Writes a record of the run (a JSON document) atomically, every string in it redacted.
void write_record(const RunState &state, const std::filesystem::path &path,
                  const nlohmann::json &doc);
// Every target checked to be a file of the evaluated commit before anything runs (exit 2), and
// the commit's objects to be present (exit 12).
void check_targets(const Evaluation &ev, const git::WorkspaceSource &source,
                   files::RunDirectory &private_dir);

// Where the run's trials keep their workspace and home: a file system of the budget's size when
// the configuration asks for one and the runtime may mount it (root), in a mount namespace of
// the runtime's own. Returns why there is none, when there is none.
std::string choose_disk(RunState &state, const config::BudgetSettings &settings);

// A trial's workspace: for a project at the root of its repository, a checkout attached to a
// private repository of the evaluated commit's history without the evaluation folder (see
// git/private_repository.hpp), built once and then reused from the runtime's cache; otherwise a
// plain checkout (or copy) with no history. Returns the private repository, or an empty path.
std::filesystem::path prepare_workspace(const RunState &state,
                                        const std::filesystem::path &workspace,
                                        files::RunDirectory &private_dir);
// The same, of any source (a historical probe's: the run's at another commit).
std::filesystem::path prepare_workspace(const git::WorkspaceSource &source,
                                        const std::filesystem::path &workspace,
                                        files::RunDirectory &private_dir);

// Every probe's call of its entry, in order, in one workspace and home. label names the trial or
// leg in the progress lines; the call records go to trial_dir/calls.
Calls run_calls(RunState &state, int index, const std::string &label,
                const std::filesystem::path &trial_dir, const std::filesystem::path &workspace,
                const std::filesystem::path &home, const std::filesystem::path &repository,
                files::RunDirectory &private_dir, TrialProgress &progress);

// One trial: a fresh workspace and home, the calls, the artifacts, the evaluator. Returns what
// the trial adds to its run (a trial task's trials/N/trial.json, docs/records.md): the trial's
// entry of run.json under "trial", and the paths its calls listed, its egress refusals, its
// services that failed to start, its host-socket truncation, its confinement and observer. None
// when interrupted during the calls; interrupted in the evaluator, "interrupted" is true (and
// state.interrupted says by what).
std::optional<nlohmann::json> trial_outcome(RunState &state, int index,
                                            files::RunDirectory &private_dir,
                                            TrialProgress &progress);
// Adds a trial's outcome to its run, as if this process had run the trial. Outcomes are merged in
// the order of their trials. Throws nlohmann::json::exception or std::invalid_argument for an
// outcome that is not whole (trial_outcome's shape is checked by trial_task.hpp first).
void merge_trial(RunState &state, const nlohmann::json &outcome);
// trial_outcome then merge_trial. Returns false when interrupted.
bool run_trial(RunState &state, int index, files::RunDirectory &private_dir,
               TrialProgress &progress);

// A run begun: its records directory made (EVAL_DIR/runs/<run-id>) and its run.json written,
// every target checked, the trials' file system chosen. `run_id` names the run.
void begin_run(RunState &state, files::RunDirectory &private_dir);

// Every trial, in order, until the last or an interruption (state.interrupted). A failure is
// recorded in run.json ("failed", with its error) and thrown on.
void run_trials(RunState &state, files::RunDirectory &private_dir, TrialProgress &progress);

// The run's end: its status, the isolation manifest, then run.json with its summary line.
RunSummary finish_run(RunState &state);

}  // namespace tea::evaluation
