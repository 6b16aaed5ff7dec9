#include "cli/arm_processes.hpp"

#include <nlohmann/json.hpp>

#include "cli/child_processes.hpp"
#include "util/console.hpp"
#include "util/error.hpp"

namespace tea::cli {
namespace {

// The arm's result from what it wrote; nullopt, said, when it wrote none its parent can read.
std::optional<evaluation::ArmResult> result_of(const ChildEnd &end, const std::string &spec,
                                               bool say) {
    try {
        return evaluation::arm_result_from_json(nlohmann::json::parse(end.out));
    } catch (const nlohmann::json::exception &e) {
        if (say) {
            console::err() << "tea-evaluate: qualify: arm " << spec
                           << " handed back no result its parent can read: " << e.what() << '\n';
        }
        return std::nullopt;
    }
}

}  // namespace

ArmProcessesOutcome run_arm_processes(const std::vector<std::string> &argv,
                                      const std::vector<ArmLaunch> &arms, std::size_t second_wave,
                                      int jobs) {
    std::vector<ChildLaunch> launches;
    launches.reserve(arms.size());
    for (const auto &arm : arms) {
        launches.push_back({{"--arm", arm.spec}, arm.input, "arm " + arm.spec});
    }
    // An arm that fails, or hands back nothing readable, ends the others: no qualification is
    // recorded from some of its arms.
    const auto children = run_child_processes(
        argv, launches, second_wave, jobs,
        [](const ChildEnd &end) { return end.status != 0 || !nlohmann::json::accept(end.out); });
    ArmProcessesOutcome outcome;
    outcome.results.resize(arms.size());
    outcome.interrupted = children.interrupted;
    for (std::size_t i = 0; i < arms.size(); ++i) {
        const auto &end = children.ends[i];
        if (end.started && end.status == 0) {
            outcome.results[i] = result_of(end, arms[i].spec, children.stopped_by == i);
        }
    }
    if (const auto by = children.stopped_by; by && outcome.interrupted == 0) {
        const int status = children.ends[*by].status;
        if (status > 128 && status < 128 + 65) {
            // An arm interrupted by a signal of its own ends the others as this one's would.
            outcome.interrupted = status - 128;
        } else {
            if (status != 0) {
                console::err() << "tea-evaluate: qualify: arm " << arms[*by].spec << " "
                               << status_text(status) << '\n';
            }
            outcome.failed = status != 0 ? status : static_cast<int>(ExitCode::runtime);
        }
    }
    return outcome;
}

}  // namespace tea::cli
