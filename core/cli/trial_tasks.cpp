#include "cli/trial_tasks.hpp"

#include <nlohmann/json.hpp>
#include <utility>

#include "cli/child_processes.hpp"
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
    const auto progress = progress_lines(common.quiet, true);
    const auto outcome = evaluation::trial_outcome(state, index, private_dir, *progress);
    if (outcome) evaluation::write_trial_outcome(state, *outcome);
    return state.interrupted != 0 ? 128 + state.interrupted : 0;
}

void merge_trial_outcomes(evaluation::RunState &state, const std::vector<TrialTaskEnd> &ends) {
    evaluation::TrialOutcomes outcomes{state.run_id};
    for (std::size_t k = 0; k < ends.size(); ++k) {
        const int i = static_cast<int>(k) + 1;
        const auto &end = ends[k];
        if (!end.started) continue;  // interrupted before it started: not made, as in one process
        const auto file = evaluation::trial_outcome_file(state.records, i);
        std::string why;
        const auto outcome = read_record(file, &why);
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

void run_trial_tasks(evaluation::RunState &state, const std::vector<std::string> &argv, int jobs) {
    const int trials = state.ev.trials;
    std::vector<ChildLaunch> launches;
    for (int i = 1; i <= trials; ++i) {
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
    merge_trial_outcomes(state, ends);
}

}  // namespace tea::cli
