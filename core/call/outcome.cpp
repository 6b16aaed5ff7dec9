#include "call/outcome.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <tea/json_bytes.hpp>

#include "util/error.hpp"

namespace tea::call {
namespace {

int not_started_status(const exec::CallResult &r) {
    if (r.start_errno == ENOENT) {
        return 127;  // as a shell reports a command it cannot find
    }
    if (r.start_errno == EACCES || r.start_errno == ENOEXEC) {
        return 126;
    }
    return static_cast<int>(ExitCode::runtime);
}

constexpr int exit_timed_out = 124;

}  // namespace

int call_status(const exec::CallResult &result, const exec::RunOptions &run) {
    if (result.interrupted_by != 0) {
        spdlog::warn("interrupted by signal {}; the call was ended", result.interrupted_by);
        return 128 + result.interrupted_by;
    }
    if (!result.started) {
        spdlog::error("the target did not start: {}", result.start_error);
        return not_started_status(result);
    }
    if (result.timed_out) {
        // As timeout(1) reports it: whatever the target did on SIGTERM, a
        // call that ran out of time never passes for one that succeeded.
        spdlog::error("the call exceeded its timeout of {} ms and was ended",
                      run.timeout ? run.timeout->count() : 0);
        return exit_timed_out;
    }
    return result.status();
}

nlohmann::json identity_record(const CallOutcome &outcome) {
    nlohmann::json lent = nlohmann::json::array();
    for (const auto &l : outcome.lent) {
        nlohmann::json item{{"path", bytes::to_json(l.path.string())},
                            {"by", l.idmapped ? "idmap" : "ownership"}};
        if (!l.idmapped) {
            item["fileSystem"] = l.filesystem;
        }
        lent.push_back(std::move(item));
    }
    return {{"uid", outcome.uid},
            {"gid", outcome.gid},
            {"from", outcome.identity_from},
            {"lent", std::move(lent)}};
}

bool target_exec_failed(const exec::CallResult &result) {
    const bool confinement_stood = !result.setup_marked || result.setup_reached;
    return result.started && confinement_stood &&
           (result.status() == 126 || result.status() == 127);
}

StartFailure start_failure(const exec::CallResult &result, const audit::Observation *observation,
                           const std::string &observer_reason, const std::string &observer,
                           const std::string &backend) {
    const auto status = std::to_string(result.status());
    if (!result.started) {
        return {FailedSide::plan, "the plan of the backend '" + backend + "' could not be started",
                result.start_error};
    }
    const bool confinement_stood = !result.setup_marked || result.setup_reached;
    if (target_exec_failed(result)) {
        // The shell's convention, which launchers (sh, env, bwrap's helper) follow: the target's
        // own exec failed, found but not executable (126) or not found (127).
        return {FailedSide::target_exec,
                std::string{"the target could not be "} +
                    (result.status() == 126 ? "executed" : "found") + " (status " + status +
                    ") by the launcher in the plan of the backend '" + backend + "'",
                "the program must be in the confinement's view, and executable by the identity "
                "the target runs as"};
    }
    StartFailure failure{FailedSide::plan,
                         "the confinement of the backend '" + backend + "' ended (status " +
                             status + ") before the target started",
                         ""};
    if (confinement_stood && observation != nullptr && !observer_reason.empty()) {
        // No trace at all of a plan whose confinement did not say it stood: the plan or the
        // tracer around it failed first, and only their own messages can tell which.
        failure.detail = "the observer '" + observer + "' has no trace of it: " + observer_reason;
    }
    return failure;
}

nlohmann::json egress_refusals(const nlohmann::json &records) {
    if (records.is_object() && records.contains("refusals") && records["refusals"].is_array()) {
        return records["refusals"];
    }
    return nlohmann::json::array();
}

}  // namespace tea::call
