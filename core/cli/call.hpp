// One confined, audited call, as exec and preflight run it: the backend's plan, the observer
// around it, the call's directories lent to the target's identity, the run, the judged audit and
// the cleanup, in that order, with nothing left behind whatever fails.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "audit/observation.hpp"
#include "cli/runtime.hpp"
#include "egress/egress.hpp"
#include "exec/call_identity.hpp"
#include "exec/call_runner.hpp"
#include "exec/exec_plan.hpp"
#include "exec/lending.hpp"
#include "fs/private_dirs.hpp"
#include "plugins/selection.hpp"

namespace tea::cli {

// What exec and preflight take from the command line about the call.
struct CallOptions {
    std::optional<std::filesystem::path> workspace;  // default: the current directory
    std::vector<std::string> withhold;
    std::vector<std::string> system_paths;  // --system-path: declared read grants
    std::optional<std::int64_t> timeout_ms;
    bool clean_env = false;
    std::vector<std::string> env;     // NAME=VALUE or NAME (the host's value)
    std::vector<std::string> egress;  // --egress HOST:PORT[=ADDR,...]
    std::vector<std::string> command;
};

// The hosts a call may reach through the egress plugin's route; none: no route at all.
struct EgressRequest {
    std::string entry;  // the name refusals give (the registry entry; for exec, the command)
    std::vector<egress::Item> items;
};

struct CallOutcome {
    exec::CallResult result;
    std::string confinement;
    std::string report_json = "{}";
    std::vector<std::string> sockets_left_reachable;  // see ExecPlan::sockets_left_reachable
    audit::AuditResult audit;
    int status = 0;  // the exit status the command reports for the call
    // The audit shows the confinement ending before the target started (bwrap refused a bind,
    // say): nothing of the target ran, so its status is the infrastructure's, not the target's.
    bool target_never_started = false;
    std::vector<egress::Item> egress;   // the items the call's route admitted (empty: no route)
    std::string egress_records = "{}";  // the egress plugin's records of the call
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

class Session {
   public:
    // Loads the configuration and plugins and selects the backend (exit 2 or 12 when it cannot).
    // An opted-out session takes confinement.opt_out_backend, whatever --backend says: the
    // evaluation, not the command line, decides that its targets run unconfined.
    explicit Session(const CommonOptions &common, bool opt_out = false);

    // The call's launch spec; the workspace defaults to the current directory. Exit 2 for a
    // workspace that is no directory or an option that is not absolute once resolved.
    [[nodiscard]] exec::LaunchSpec launch_spec(const CallOptions &options) const;

    // Runs one call in a run directory of its own (a fresh temp directory and, unless the spec
    // names one, a fresh home; a home the caller names must lie in a run directory beneath the
    // private root). The observer is chosen and confirmed before the first audited call.
    // A call that lists egress items gets a route out for its duration.
    // `removed_after`: directories of the spec the caller removes once the call has ended (a
    // trial's workspace and home); lent to the sandbox identity, they are not given back.
    CallOutcome call(exec::LaunchSpec spec, const exec::RunOptions &run,
                     const EgressRequest &route_request = {},
                     std::vector<std::filesystem::path> removed_after = {});

    // Runs a process of the evaluation layer (an evaluator) through the backend's grader view:
    // outside every target's confinement, unaudited, as the invoking user, with the spec's
    // read_only paths (the evaluation folder, the git directory) read-only. The plan's
    // confinement is stored in *confinement.
    exec::CallResult grade(exec::LaunchSpec spec, const exec::RunOptions &run,
                           std::string *confinement);

    // The --egress items of the options (exit 2 for a malformed one).
    [[nodiscard]] static EgressRequest egress_request(const CallOptions &options);

    [[nodiscard]] const Runtime &runtime() const { return runtime_; }
    [[nodiscard]] const std::filesystem::path &private_root() const { return private_root_; }
    // The observer's name once chosen ("" when calls are not audited).
    [[nodiscard]] std::string observer_name() const;
    [[nodiscard]] const std::string &backend_name() const;

    // The runner's options for a call: the timeout asked for, the configured grace and output
    // caps, and the runtime's signal descriptor. Output is kept, not copied anywhere.
    [[nodiscard]] exec::RunOptions run_options(const CallOptions &options) const;

    // Logs the time since the session started (at -vv).
    void phase(const char *what) const;

    // A directory of the invoker's above the workspaces of the calls to come, which the target's
    // identity must search to reach them. A call whose target runs as another identity (the
    // sandbox account, when the runtime is root) first hands it to that identity's group,
    // searchable by it alone (0710), as it does its run directories; otherwise it is left as it
    // is.
    void search_by_target(std::filesystem::path dir);

   private:
    // The removed_after of the call running now (empty between calls).
    std::vector<std::filesystem::path> removed_after_;
    std::vector<std::filesystem::path> searched_by_target_;  // see search_by_target
    // (ABI 1.5) The call running now, started before its plan was complete; finished by execute,
    // and killed unfinished when the call fails before that.
    std::optional<exec::StartedCall> staged_;
    // The call's own identity, when the runtime is root and [confinement] uid_range is set.
    std::optional<exec::CallIdentity> identity_;
    // The call's lent directories (see hand_to_target), and the plan's lend they were made for.
    std::optional<exec::Lending> lending_;
    exec::Lend lent_for_;
    std::vector<exec::Lending::Lent> last_lent_;  // what the last run of the call lent
    std::set<std::string> warned_ownership_;      // trees already named as lent by ownership
    struct Executed {
        exec::CallResult result;
        std::optional<audit::Observation> observation;
    };
    // The directories a call's target identity must pass through: those of search_by_target,
    // the call's run directory, and the run directory of a trial's workspace or home.
    [[nodiscard]] std::vector<std::filesystem::path> searched_directories(
        const exec::LaunchSpec &spec, const fs::RunDirectory &run_dir) const;
    void hand_to_target(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                        fs::RunDirectory &run_dir);
    Executed execute(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                     fs::RunDirectory &run_dir, const exec::RunOptions &run, bool observed);
    Executed execute_with_retry(const exec::LaunchSpec &spec, exec::ExecPlan &plan,
                                fs::RunDirectory &run_dir, const exec::RunOptions &run,
                                bool observed);
    // prepare, with the directories the plan asks for made; a plan that does not answer for
    // the spec's unmade directories gets them made and is prepared once more.
    exec::ExecPlan prepare_call(exec::LaunchSpec &spec, fs::RunDirectory &run_dir) const;
    void choose_observer(const exec::ExecPlan &plan);
    void confirm_observer(const exec::ExecPlan &sample, const exec::LaunchSpec &call);
    [[nodiscard]] exec::ExecPlan prepare(const exec::LaunchSpec &spec) const;
    [[nodiscard]] exec::ExecPlan wrap(const exec::ExecPlan &plan,
                                      const std::filesystem::path &trace_dir) const;
    std::unique_ptr<egress::Session> open_route(const EgressRequest &request,
                                                fs::RunDirectory &run_dir);
    [[nodiscard]] audit::Observation collect(const exec::ExecPlan &plan,
                                             const std::filesystem::path &trace_dir) const;

    std::chrono::steady_clock::time_point started_;
    Runtime runtime_;
    plugins::Selected backend_;
    plugins::Selected observer_;
    plugins::Selected egress_;
    bool observer_chosen_ = false;
    bool observer_confirmed_ = false;
    bool opt_out_warned_ = false;
    std::string no_audit_reason_;
    std::filesystem::path private_root_;
};

}  // namespace tea::cli
