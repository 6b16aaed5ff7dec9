// The observer's side of a call: which observer watches the session's calls (chosen at the first
// call), whether it can be trusted on this host (confirmed once by a probe call), the plan it
// wraps around the backend's, and what it reports of the call.
#pragma once

#include <filesystem>
#include <future>
#include <optional>
#include <string>

#include "audit/observation.hpp"
#include "call/outcome.hpp"
#include "call/runtime.hpp"
#include "exec/call_runner.hpp"
#include "exec/exec_plan.hpp"
#include "files/private_dirs.hpp"
#include "plugins/selection.hpp"

namespace tea::call {

// What one run of a plan gave: the runner's result, and the observer's report when one watched.
struct Executed {
    exec::CallResult result;
    std::optional<audit::Observation> observation;
    std::string observer_reason;  // why the observer itself said its report is incomplete
};

class CallObserver {
   public:
    CallObserver(const Runtime &runtime, const plugins::Selected &backend)
        : runtime_(runtime), backend_(backend) {}

    // Starts creating and probing the configured observer on a thread of its own, so that its
    // probe (an observer's loading of kernel programs, say) overlaps the preparation of the first
    // call's plan; choose takes its answer. Does nothing for audit.observer = "none", once
    // started, or once chosen.
    void start_choosing();
    // At the first call: none for audit.observer = "none" or an opt-out plan (no_audit_reason
    // says why); otherwise the configured one, created and probed (by start_choosing, when it
    // ran). Exit 2 for an observer named for an unconfined backend; selection's exits otherwise.
    void choose(const exec::ExecPlan &plan);
    [[nodiscard]] bool chosen() const { return chosen_; }
    // Whether an observer watches the calls (once chosen).
    [[nodiscard]] bool watching() const { return observer_.plugin != nullptr; }
    [[nodiscard]] std::string name() const;
    [[nodiscard]] const std::string &no_audit_reason() const { return no_audit_reason_; }

    // The observer's plan around the backend's, its trace in trace_dir: checked like a plan, with
    // what the confinement recorded, lends and hints put back from the backend's plan, and the
    // plan's holder never shown to it. Exit 12 when the observer fails, 125 for an invalid plan.
    [[nodiscard]] exec::ExecPlan wrap(const exec::ExecPlan &plan,
                                      const std::filesystem::path &trace_dir) const;

    // What the observer saw of the call run from `plan`, its trace in trace_dir. Exit 12 when it
    // cannot say.
    [[nodiscard]] audit::Observation collect(const exec::ExecPlan &plan,
                                             const std::filesystem::path &trace_dir) const;

    // Whether the observer is known to see a confined call on this host: confirmed by this
    // session, or remembered by a stamp of the wrapped `sample` (the call's plan).
    [[nodiscard]] bool confirmed(const exec::ExecPlan &sample, std::size_t target_args,
                                 const std::filesystem::path &private_root);
    // The confirmation of the probe call's run; remembered in the stamp. Exit 12 (or 128+N when
    // interrupted) when the observer did not see the probe read its file, naming the side that
    // failed (call/outcome.hpp) and quoting the end of the probe's stderr (`stderr_file`).
    void confirm(const Executed &probe_run, const std::string &probe_file,
                 const std::string &backend, const std::filesystem::path &stderr_file);

   private:
    const Runtime &runtime_;
    const plugins::Selected &backend_;
    plugins::Selected observer_;
    // The selection start_choosing began; its thread is waited for when this ends.
    std::future<plugins::Selected> selecting_;
    bool chosen_ = false;
    bool confirmed_ = false;
    std::filesystem::path stamp_;  // where the confirmation is remembered
    std::string no_audit_reason_;
};

// The confirmation probe's launch spec, its directories in run_dir: a confined `cat` of a probe
// file in a fresh home, with the call's own workspace and withheld paths, so the probe lends and
// covers nothing the call itself would not. *probe_file is the file it reads.
exec::LaunchSpec probe_launch_spec(const exec::LaunchSpec &call, files::RunDirectory &run_dir,
                                   const Runtime &runtime, std::string *probe_file);

}  // namespace tea::call
