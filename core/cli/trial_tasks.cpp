#include "cli/trial_tasks.hpp"

#include <nlohmann/json.hpp>
#include <utility>

#include "cli/child_processes.hpp"
#include "cli/coordinator_lease.hpp"
#include "cli/score_decision.hpp"
#include "evaluation/trial_task.hpp"
#include "util/console.hpp"
#include "util/error.hpp"

namespace tea::cli {

using nlohmann::json;

int trial_task_command(const CommonOptions &common, const RunCommandOptions &options) {
    const auto [run_id, index] = evaluation::parse_trial_task_spec(*options.trial_task);
    auto opened = open_evaluation(common, options.evaluation);
    if (!opened) return static_cast<int>(ExitCode::usage);
    evaluation::RunState state{opened->ev, *opened->session, opened->source, run_id};
    state.logins = std::move(opened->logins);
    files::RunDirectory private_dir{opened->session->private_root()};
    std::string why;
    const auto run = read_record(opened->ev.folder / "runs" / run_id / "run.json", &why);
    if (run.is_null()) {
        throw usage_error("trial task " + std::to_string(index) + " of run " + run_id + ": " + why);
    }
    evaluation::adopt_run(state, run, index, private_dir);
    if (run.contains("executor") && run["executor"].is_object() &&
        run["executor"].value("kind", "") == "slurm") {
        // A coordinator killed outright cannot cancel its array: a trial made for it now would be
        // merged by no one, while a run that still waits may take it for this one.
        const auto coordinator = coordinator_state(state.records / "slurm");
        if (coordinator.is != CoordinatorState::Is::alive) {
            throw host_error("trial task " + std::to_string(index) + " of run " + run_id +
                             " is not run: the run's coordinator is not known to be alive (" +
                             coordinator.why + ")");
        }
    }
    const auto progress = progress_lines(common.quiet, true);
    const auto outcome = evaluation::trial_outcome(state, index, private_dir, *progress);
    if (outcome) {
        evaluation::write_trial_outcome(state, *outcome);
    } else if (state.interrupted != 0) {
        evaluation::write_trial_outcome(state, evaluation::interrupted_calls_outcome(state, index));
    }
    return state.interrupted != 0 ? 128 + state.interrupted : 0;
}

namespace {

// Trial `index`'s trial.json as read back; null with *why when there is no outcome. What a trial
// interrupted in its calls handed back is added to the run's lists here, once: its file goes, so
// that a retry's outcome or a second reading does not add it again, and it reads as no outcome.
nlohmann::json read_outcome(evaluation::RunState &state, int index, std::string *why) {
    const auto file = evaluation::trial_outcome_file(state.records, index);
    auto outcome = read_record(file, why);
    if (evaluation::merge_interrupted_calls(state, outcome, index)) {
        std::error_code ec;
        std::filesystem::remove(file, ec);
        *why = "its trial was interrupted in its calls";
        return nullptr;
    }
    return outcome;
}

}  // namespace

void merge_trial_outcomes(evaluation::RunState &state, const std::vector<TrialTaskEnd> &ends) {
    evaluation::TrialOutcomes outcomes{state.run_id};
    for (std::size_t k = 0; k < ends.size(); ++k) {
        const int i = static_cast<int>(k) + 1;
        const auto &end = ends[k];
        if (!end.started) continue;  // interrupted before it started: not made, as in one process
        const auto file = evaluation::trial_outcome_file(state.records, i);
        std::string why;
        const auto outcome = read_outcome(state, i, &why);
        const auto decision = outcomes.decide(outcome, why, i, state.interrupted != 0);
        if (decision.merge) {
            evaluation::merge_trial(state, outcome);
            // Merged, the outcome is in run.json: the run's records are those of one process.
            std::error_code ec;
            std::filesystem::remove(file, ec);
        }
        if (decision.failed.empty()) continue;
        // Ended by the run's own signal before its outcome: not made, as in one process.
        if (!decision.merge && state.interrupted != 0 && end.interrupted) continue;
        const auto reason = "its task ended with " + end.how + ", and " + decision.failed;
        console::err() << "tea-evaluate: run " << state.run_id << ": trial " << i << ": " << reason
                       << '\n';
        state.run["failedTrialTasks"].push_back(
            {{"trialIndex", i}, {"status", end.status}, {"reason", reason}});
    }
}

std::vector<int> trials_to_retry(evaluation::RunState &state,
                                 const std::vector<TrialTaskEnd> &ends) {
    std::vector<int> again;
    if (state.interrupted != 0) return again;
    for (std::size_t k = 0; k < ends.size(); ++k) {
        const int i = static_cast<int>(k) + 1;
        if (ends[k].never_ran) continue;
        std::string why;
        const auto outcome = read_outcome(state, i, &why);
        // Each on its own: a trial made under another confinement than the others is refused
        // when merged, not made again on a node configured the same.
        const auto decision =
            evaluation::TrialOutcomes{state.run_id}.decide(outcome, why, i, false);
        if (decision.merge) continue;
        const auto reason = "its task ended with " + ends[k].how + ", and " + decision.failed;
        console::err() << "tea-evaluate: run " << state.run_id << ": trial " << i << ": " << reason
                       << "; it is made again\n";
        // The first failure's why is kept: a retry that passes does not hide that one failed.
        state.run["retriedTrialTasks"].push_back(
            {{"trialIndex", i}, {"status", ends[k].status}, {"reason", reason}});
        again.push_back(i);
    }
    if (!again.empty()) evaluation::save_run(state);
    return again;
}

namespace {

// The tasks of `trials`, up to `jobs` at once; how each ended, in the order of `trials`.
std::vector<TrialTaskEnd> trial_tasks(evaluation::RunState &state,
                                      const std::vector<std::string> &argv,
                                      const std::vector<int> &trials, int jobs) {
    std::vector<ChildLaunch> launches;
    launches.reserve(trials.size());
    for (const int i : trials) {
        launches.push_back({{"--trial-task", evaluation::trial_task_spec(state.run_id, i)},
                            {},
                            "the task of trial " + std::to_string(i)});
    }
    // A task that fails ends no other: its trial is an infrastructure error, the others count.
    const auto children = run_child_processes(argv, launches, launches.size(), jobs,
                                              [](const ChildEnd &) { return false; });
    state.interrupted = children.interrupted;
    std::vector<TrialTaskEnd> ends;
    for (const auto &end : children.ends) {
        // Only the run's own signal, forwarded, ends a task as the run's interruption; a task
        // that crashed meanwhile failed.
        ends.push_back({end.started, end.status, status_text(end.status),
                        state.interrupted != 0 && end.status == 128 + state.interrupted});
    }
    return ends;
}

}  // namespace

void make_trials(evaluation::RunState &state, int retries, const TrialTasks &tasks) {
    std::vector<int> all;
    for (int i = 1; i <= state.ev.trials; ++i) all.push_back(i);
    auto ends = tasks(all);
    if (retries > 0) {
        const auto again = trials_to_retry(state, ends);
        if (!again.empty()) {
            const auto second = tasks(again);
            for (std::size_t k = 0; k < again.size(); ++k) {
                ends[static_cast<std::size_t>(again[k] - 1)] = second[k];
            }
        }
    }
    merge_trial_outcomes(state, ends);
}

void run_trial_tasks(evaluation::RunState &state, const std::vector<std::string> &argv, int jobs,
                     int retries) {
    make_trials(state, retries, [&](const std::vector<int> &trials) {
        return trial_tasks(state, argv, trials, jobs);
    });
}

}  // namespace tea::cli
