// What one call gave, as the commands report and record it: the runner's result, the status the
// command reports, the judged audit, the route's records and whom the target ran as.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/observation.hpp"
#include "egress/egress.hpp"
#include "exec/call_runner.hpp"
#include "exec/lending.hpp"

namespace tea::call {

// Which side ended a call before its target started.
enum class FailedSide {
    none,
    plan,         // the backend's plan (its launcher, its confinement) ended first
    target_exec,  // the plan's launcher could not execute the target (126) or find it (127)
    observer,     // the target started, and the observer did not see what it did
};

struct StartFailure {
    FailedSide side = FailedSide::none;
    // Which side failed and how, ending "... before the target started" for the plan's side.
    std::string sentence;
    std::string detail;  // what else is known (an observer with no trace of the call), or ""
};

// Whether a call whose target never started ended by its target's own exec failing: the
// confinement stood (its setup mark taken, when it has one) and the plan's launcher exited as a
// shell does for a program it cannot execute (126) or find (127).
bool target_exec_failed(const exec::CallResult &result);

// Which side ended a call whose target never started, from what the runner saw (`result`) and
// what the observer reported (`observation`, null when none watched; `observer_reason`, the
// observer's own reason for an incomplete report). Nothing is guessed: when the plan ran under
// the observer without leaving a trace, the plan's own message on stderr says which failed.
StartFailure start_failure(const exec::CallResult &result, const audit::Observation *observation,
                           const std::string &observer_reason, const std::string &observer,
                           const std::string &backend);

struct CallOutcome {
    exec::CallResult result;
    std::string confinement;
    nlohmann::json backend_report = nlohmann::json::object();  // the plan's report (an object)
    std::vector<std::string> sockets_left_reachable;  // see ExecPlan::sockets_left_reachable
    audit::AuditResult audit;
    int status = 0;  // the exit status the command reports for the call
    // The audit shows the confinement ending before the target started (bwrap refused a bind,
    // say): nothing of the target ran, so its status is the infrastructure's, not the target's.
    bool target_never_started = false;
    StartFailure start_failure;        // which side failed, when the target never started
    std::vector<egress::Item> egress;  // the items the call's route admitted (empty: no route)
    // The egress plugin's records of the call (an object; empty for a call without a route).
    nlohmann::json egress_records = nlohmann::json::object();
    // Whom the target ran as: the plan's runAs, or the invoker; "range" when the identity was
    // the call's own ([confinement] uid_range), "backend" when the backend chose it, "invoker".
    unsigned uid = 0;
    unsigned gid = 0;
    std::string identity_from = "invoker";
    std::vector<exec::Lending::Lent> lent;  // how each lent directory was lent (as root)
};

// The record of whom a call's target ran as and how its directories were lent, for exec --json
// and run.json: {"uid", "gid", "from", "lent": [{"path", "by": "idmap" | "ownership",
// "fileSystem"}]}.
nlohmann::json identity_record(const CallOutcome &outcome);

// The egress records' refusals (an empty list for a call without a route, or none refused).
nlohmann::json egress_refusals(const nlohmann::json &records);

// The status a command reports for a call: the target's, 124 at its timeout, 128+N when the
// runtime was interrupted, 127/126 when it could not be started (as a shell reports it).
int call_status(const exec::CallResult &result, const exec::RunOptions &run);

}  // namespace tea::call
