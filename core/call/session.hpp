// The calls of one command, as exec, preflight and run make them: for each call the backend's
// plan (call/prepare.hpp), the observer around it (call/observe.hpp), the call's directories lent
// to the target's identity (call/handover.hpp), the run, the judged audit and the cleanup, in that
// order, with nothing left behind whatever fails. The backend, the observer and the egress plugin
// are chosen once for the session.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "call/handover.hpp"
#include "call/launch.hpp"
#include "call/observe.hpp"
#include "call/outcome.hpp"
#include "call/prepare.hpp"
#include "call/runtime.hpp"
#include "egress/egress.hpp"
#include "exec/call_identity.hpp"
#include "exec/call_runner.hpp"
#include "exec/exec_plan.hpp"
#include "files/private_dirs.hpp"
#include "plugins/selection.hpp"

namespace tea::call {

// A call whose target is a started service reached through the bridge
// (docs/services-bridge-design.md): the session makes the bridge's directory in the call's run
// directory with the empty port file, names the file in the target's TEA_PORT_FILE, and hands the
// directory to the backend (the launch spec's bridge) and to `dir_made` before the target starts,
// so the caller's conversation can drive a bridge::ServiceBridge on it. The directory goes with the
// call's run directory.
struct ServiceBridgeRequest {
    bool wanted = false;
    std::function<void(const std::filesystem::path &dir)> dir_made;
};

class CallSession {
   public:
    // Selects and probes the configured backend (exit 2 or 12 when it cannot), then opens the
    // private root (owner and mode checked) and reclaims what a killed run left there. `started`:
    // when the command started, for the phases logged at -vv.
    CallSession(Runtime runtime, const std::filesystem::path &private_root,
                std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now());
    CallSession(const CallSession &) = delete;
    CallSession &operator=(const CallSession &) = delete;
    ~CallSession();

    // Runs one call in a run directory of its own (a fresh temp directory and, unless the spec
    // names one, a fresh home; a home the caller names must lie in a run directory beneath the
    // private root). The observer is chosen and confirmed before the first audited call.
    // A call that lists egress items gets a route out for its duration.
    // `removed_after`: directories of the spec the caller removes once the call has ended (a
    // trial's workspace and home); lent to the sandbox identity, they are not given back.
    CallOutcome call(exec::LaunchSpec spec, const exec::RunOptions &run,
                     const EgressRequest &route_request = {},
                     std::vector<std::filesystem::path> removed_after = {},
                     const ServiceBridgeRequest &service_bridge = {});

    // Runs a process of the evaluation layer (an evaluator) through the backend's grader view:
    // outside every target's confinement, unaudited, as the invoking user, with the spec's
    // read_only paths (the evaluation folder, the git directory) read-only. The plan's
    // confinement is stored in *confinement. With `route_request` items (an agent of the
    // evaluation layer), the process's IP traffic reaches those hosts through the egress route
    // and nothing else (its view still shows the host's files, Unix sockets included), and the
    // route's records go to *egress_records (left null when no route was applied);
    // without, it keeps the host's network. An unconfined backend drops the route with a warning,
    // as for a call; a confining one whose plan does not report "network": "egress" is refused.
    exec::CallResult grade(exec::LaunchSpec spec, const exec::RunOptions &run,
                           std::string *confinement, const EgressRequest &route_request = {},
                           nlohmann::json *egress_records = nullptr);

    // A directory of the invoker's above the workspaces of the calls to come, which the target's
    // identity must search to reach them. A call whose target runs as another identity (the
    // sandbox account, when the runtime is root) first hands it to that identity's group,
    // searchable by it alone (0710), as it does its run directories; otherwise it is left as it
    // is.
    void search_by_target(std::filesystem::path dir);

    [[nodiscard]] const Runtime &runtime() const { return runtime_; }
    [[nodiscard]] const std::filesystem::path &private_root() const { return private_root_; }
    // The observer's name once chosen ("" when calls are not audited).
    [[nodiscard]] std::string observer_name() const { return observer_.name(); }
    [[nodiscard]] const std::string &backend_name() const;
    [[nodiscard]] const plugins::Capabilities &backend_capabilities() const;

    // The runner's options for a call of `options` (see call/launch.hpp).
    [[nodiscard]] exec::RunOptions run_options(const CallOptions &options) const;
    // The call's launch spec of `options` (see call/launch.hpp).
    [[nodiscard]] exec::LaunchSpec launch_spec(const CallOptions &options) const;

    // Logs the time since the command started (at -vv).
    void phase(const char *what) const;

   private:
    // Runs a prepared plan: wrapped by the observer when `observed`, with the call's directories
    // lent to the target's identity for the call's duration only.
    Executed execute(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                     files::RunDirectory &run_dir, const exec::RunOptions &run, bool observed);
    Executed execute_with_retry(const exec::LaunchSpec &spec, exec::ExecPlan &plan,
                                files::RunDirectory &run_dir, const exec::RunOptions &run,
                                bool observed);
    // Before the first audited call: a traced, confined reader of a probe file must be seen
    // reading it, or the audit's empty list would be no evidence of anything.
    void confirm_observer(const exec::ExecPlan &sample, const exec::LaunchSpec &call);
    std::unique_ptr<egress::OpenRoute> open_route(const EgressRequest &request,
                                                  files::RunDirectory &run_dir);
    // (ABI 1.5) For an unaudited call without a route out: the backend's answer to the staged
    // spec, started at once when it defers files (staged_), or kept as the call's whole plan.
    std::optional<exec::ExecPlan> stage(exec::LaunchSpec &spec, const exec::RunOptions &run,
                                        files::RunDirectory &run_dir);

    std::chrono::steady_clock::time_point started_;
    Runtime runtime_;
    plugins::Selected backend_;
    plugins::Selected egress_;
    std::filesystem::path private_root_;
    Planner planner_;
    CallObserver observer_;
    Handover handover_;
    // (ABI 1.5) The call running now, started before its plan was complete; finished by execute,
    // and killed unfinished when the call fails before that.
    std::optional<exec::StartedCall> staged_;
    // The call's own identity, when the runtime is root and [confinement] uid_range is set.
    std::optional<exec::CallIdentity> identity_;
    bool opt_out_warned_ = false;
    // The runtime's own files no workspace may hold (launch.hpp), found at the first call.
    std::optional<std::vector<OwnPath>> own_paths_;
};

}  // namespace tea::call
