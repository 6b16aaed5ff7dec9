#include "cli/node_check.hpp"

#include <sys/stat.h>
#include <sys/utsname.h>

#include "call/launch.hpp"
#include "cli/score_decision.hpp"
#include "evaluation/preflight_legs.hpp"
#include "evaluation/run_records.hpp"
#include "files/beneath.hpp"
#include "files/private_dirs.hpp"
#include "util/console.hpp"
#include "util/error.hpp"

namespace tea::cli {

using nlohmann::json;

namespace {

std::string node_name() {
    utsname names{};
    return ::uname(&names) == 0 ? std::string{names.nodename} : std::string{};
}

// What stops this node making the run's trials; empty when nothing does. The run's folder was
// read here, so the shared directory is visible at the same path.
std::string what_fails(OpenedEvaluation &opened) {
    try {
        auto &session = *opened.session;
        // Where preflight makes its legs' workspaces: outside the private root, which the
        // confinement covers.
        evaluation::LegsDirectory legs_dir;
        session.search_by_target(legs_dir.path());
        const auto workspace = legs_dir.path() / ("node-check-" + files::random_token());
        std::filesystem::create_directory(workspace);
        ::chmod(workspace.c_str(), 0755);
        call::CallOptions call;
        call.workspace = workspace;
        call.command = {"/bin/true"};
        call.timeout_ms = 60'000;
        const auto outcome = session.call(session.launch_spec(call), session.run_options(call),
                                          call::egress_request(call));
        if (outcome.target_never_started || outcome.status != 0) {
            return "a confined call of /bin/true ended with status " +
                   std::to_string(outcome.status) +
                   (outcome.target_never_started ? " before it started" : "");
        }
        return {};
    } catch (const std::exception &e) {
        return std::string{"a confined call cannot be made here: "} + e.what();
    }
}

}  // namespace

int node_check_command(const CommonOptions &common, const RunCommandOptions &options) {
    const auto &run_id = *options.node_check;
    // Only a run id names a folder of runs/.
    if (!evaluation::is_run_id(run_id)) {
        throw usage_error("--node-check takes a run id, not '" + run_id + "'");
    }
    const auto node = node_name();
    auto opened = open_evaluation(common, options.evaluation);
    if (!opened) return static_cast<int>(ExitCode::usage);
    const auto records = opened->ev.folder / "runs" / run_id;
    std::string why;
    const auto run = read_record(records / "run.json", &why);
    if (run.is_null() || run.value("runId", "") != run_id || run.value("status", "") != "running") {
        throw host_error("node " + node + ": the run's folder " + records.string() +
                         " is not visible here as the run wrote it" +
                         (why.empty() ? std::string{} : ": " + why));
    }
    const auto failed = what_fails(*opened);
    // Written where the tasks write their outcomes: that it lands proves the folder writable.
    files::write_atomically(records / "slurm" / "node-check.json",
                            json{{"node", node}, {"failed", failed}}.dump() + "\n");
    if (failed.empty()) return 0;
    console::err() << "tea-evaluate: node " << node << ": " << failed << '\n';
    return static_cast<int>(ExitCode::no_confine);
}

std::string node_check_failure(const json &result, const std::string &unread,
                               const std::string &node, const std::string &stderr_tail) {
    const auto said = stderr_tail.empty() ? std::string{} : " (its stderr: " + stderr_tail + ")";
    if (!result.is_object() || !result.contains("failed") || !result["failed"].is_string() ||
        !result.contains("node") || !result["node"].is_string()) {
        // No result: the check could not read or write the run's folder, or did not run at all.
        return "node " + node + " did not hand back the check of the run's folder and confinement" +
               (unread.empty() ? std::string{} : ": " + unread) + said;
    }
    const auto failed = result["failed"].get<std::string>();
    if (failed.empty()) return {};
    return "node " + result["node"].get<std::string>() + " cannot make the run's trials: " + failed;
}

}  // namespace tea::cli
