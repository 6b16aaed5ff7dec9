// The records of a run beside run.json: the isolation manifest of the trial set and the summary
// line, shared by run (which writes them) and score (which checks them).
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "evaluation/evaluation.hpp"

namespace tea::evaluation {

struct RunSummary {
    std::string run_id;
    bool opt_out = false;
    int trials = 0;
    std::vector<int> lossy;
    std::vector<std::string> observed;
    std::set<int> refusal_trials;
    std::set<int> socket_truncation_trials;  // trials whose calls left host sockets reachable
    std::set<int> budget_trials;             // a budget stopped something in them
    // "entry 'web' in trial 2": services that failed to start (run.json's servicesFailed).
    std::vector<std::string> failed_services;
    // What took away the confinement or the audit the evaluation declares, each as "backend
    // opt-out ran the targets unconfined and unaudited" (run.json's weakened).
    std::vector<std::string> weakened;
    int interrupted = 0;
    // What the leak detectors found (leak_detectors.hpp's leak_findings).
    std::vector<std::string> leaks;
    // Trials whose task (trial_task.hpp) ended without a whole outcome: infrastructure errors.
    std::vector<int> failed_tasks;

    // Whether the run's own records make it Invalid: a path outside the grants, a lossy trial,
    // a declared confinement the run did not provide, a leak detector's finding, or a trial
    // whose task failed (the run then has no verdict for it).
    [[nodiscard]] bool invalid() const {
        return !observed.empty() || !lossy.empty() || !weakened.empty() || !leaks.empty() ||
               !failed_tasks.empty();
    }
};

// Reorders paths so that those within one of the withheld inputs (the evaluation folder, the git
// directory, the private root) come first: a reach into the grading material matters more than a
// stray read, and a long list shown in part must show it.
void withheld_first(std::vector<std::string> &paths, const std::vector<std::string> &withheld);

// "run <id>: ..." naming what weakened a run its evaluation declares confined, every lossy trial,
// every trial the egress proxy refused a request of, every trial whose calls left host sockets
// reachable, every service that failed to start, the count of paths outside the grants, and an
// opted-out run's missing sandbox.
std::string summary_line(const RunSummary &summary);

// Whether a name is a run id (new_run_id's form, trials.hpp); only such folders of EVAL_DIR/runs
// are runs.
bool is_run_id(const std::string &name);

// The run in a runs folder (EVAL_DIR/runs) that started last: the greatest run id, since run
// ids sort by start time. Folders only, never a link; nullopt when it holds none.
std::optional<std::filesystem::path> latest_run(const std::filesystem::path &runs);

// The trial set's isolation manifest: what the targets were granted (allowedMounts), what they
// reached outside it (observedMounts, each with the trials), and one note per forbidden input
// naming what withheld it.
nlohmann::json isolation_manifest(const nlohmann::json &run, const evaluation::Evaluation &ev,
                                  const std::map<std::string, std::set<int>> &observed,
                                  const std::map<std::string, std::string> &reasons);

}  // namespace tea::evaluation
