// The leak detectors put to work in a run: the host-unchanged manifests (host_unchanged.hpp) taken
// before the first trial and after the last, and, when the evaluation opts in ("canaries": true),
// a canary (canary_detector.hpp) planted in the run's records folder inside the evaluation folder
// and looked for after each trial in what its target could write.
//
// The canary is a file of the runtime's own in EVAL_DIR/runs/<run-id>/, never an addition to the
// user's files: a run killed before it removes the file leaves the user's files as they were, and
// the guarded manifest of the evaluation folder leaves runs/ out. The records hold the canary's
// SHA-256 only, so run.json, which a later target could read under opt-out, does not spell it.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "evaluation/host_unchanged.hpp"

namespace tea::evaluation {

// A host tree (or file) no target may change, less the subtrees the runtime writes itself.
struct GuardedTree {
    std::filesystem::path root;
    std::set<std::string> excluded;  // relative to the root
};

// The trees of a run: the evaluation folder, the project's git directory (when there is one),
// and the configuration's [detectors] host_unchanged paths; in each, the runtime's own writes
// (`runtime_writes`: the runs folder, the private root) left out. Throws tea::Error (exit 2)
// naming a configured path that does not exist.
std::vector<GuardedTree> guarded_trees(const std::filesystem::path &evaluation_folder,
                                       const std::filesystem::path &git_dir,
                                       const std::vector<std::filesystem::path> &configured,
                                       const std::vector<std::filesystem::path> &runtime_writes);

class RunLeakDetectors {
   public:
    // Takes the manifests of `guarded`. Throws tea::Error (exit 12) naming what a manifest could
    // not reach: a tree not seen whole before the run cannot be shown unchanged after it.
    explicit RunLeakDetectors(std::vector<GuardedTree> guarded);
    RunLeakDetectors(const RunLeakDetectors &) = delete;
    RunLeakDetectors &operator=(const RunLeakDetectors &) = delete;
    ~RunLeakDetectors();

    // A trial task's (trial_task.hpp), in another process of a run begun elsewhere: no host
    // manifests (the run's coordinator takes them before the first task and after the last),
    // and the canary the run planted in `records`, read back and checked against run.json's
    // record of it (`canaries`), never removed by the task. Throws tea::Error (exit 12) when
    // the run planted one and it is not there as planted.
    static std::shared_ptr<RunLeakDetectors> for_trial_task(const std::filesystem::path &records,
                                                            const nlohmann::json &canaries);

    // Plants a fresh canary in `records` (the run's records folder).
    void plant(const std::filesystem::path &records);
    // run.json's "canaries": null when none was planted, else where and its SHA-256.
    [[nodiscard]] nlohmann::json canaries_record() const;

    // A trial's "canaryScan": each (label, root) tree searched, the hits named "label/path".
    // Null when no canary was planted.
    [[nodiscard]] nlohmann::json scan_trial(
        const std::vector<std::pair<std::string, std::filesystem::path>> &trees) const;

    // Removes the canary and takes the manifests again: run.json's "hostUnchanged", one record
    // per guarded tree with every change and every entry either walk could not reach.
    nlohmann::json finish();

   private:
    void remove_canary() noexcept;

    std::vector<GuardedTree> guarded_;
    std::vector<HostManifest> before_;
    std::string canary_;
    std::filesystem::path canary_file_;
};

// What run.json's leak detectors' records make Invalid, each named: "trial 2: the run's canary
// is in workspace/stolen.txt (content)", "host tree /p/.tea changed: evaluator/grade.sh (changed:
// content)", and any record missing or not read whole (a scan or walk that could not be made
// proves nothing). Shared by run (its summary) and score.
std::vector<std::string> leak_findings(const nlohmann::json &run);

}  // namespace tea::evaluation
