#include "call/observe.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <system_error>
#include <tea/json_bytes.hpp>
#include <tea/stamp.hpp>

#include "util/error.hpp"
#include "util/paths.hpp"

namespace tea::call {
namespace {

constexpr const char *kProbeFile = "tea-evaluate-audit-probe";
constexpr std::size_t kStderrShown = 2000;  // the end of the probe's stderr, in the error

// The last bytes of a file, as lines a terminal shows as they are: control bytes but newlines and
// tabs escaped (\xNN), since the plan's programs wrote them.
std::string stderr_tail(const std::filesystem::path &file) {
    std::ifstream in{file, std::ios::binary};
    std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
    if (text.size() > kStderrShown) {
        text = "..." + text.substr(text.size() - kStderrShown);
    }
    while (!text.empty() && text.back() == '\n') {
        text.pop_back();
    }
    std::string out;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) {
            char buf[8];
            (void)std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else {
            out += c;
        }
    }
    return out;
}

// Where a confirmed observer is remembered: per boot and per everything the confirmation
// depends on (the programs the wrapped plan starts, the plugins, the identity, the kernel's
// ptrace policy). A stamp only ever skips the confirmation; each call still checks that its own
// trace shows the target starting.
std::filesystem::path confirmation_stamp(const exec::ExecPlan &wrapped,
                                         const std::size_t target_args,
                                         const plugins::Selected &backend,
                                         const plugins::Selected &observer) {
    std::string key;
    // The programs the runtime starts, not the target's own command (which ends the argv):
    // a script the target runs changing is no reason to confirm the observer again.
    const auto runtime_args = wrapped.argv.size() - std::min(target_args, wrapped.argv.size());
    for (std::size_t i = 0; i < runtime_args; ++i) {
        key += stamp::file_key(wrapped.argv[i]);
    }
    for (const auto &f : wrapped.files) {
        key += stamp::file_key(f.path);
    }
    key += stamp::file_key(backend.plugin->manifest().library.string());
    key += stamp::file_key(observer.plugin->manifest().library.string());
    key += backend.plugin->name() + ";" + observer.plugin->name() + ";";
    key += stamp::boot_id();
    key += stamp::first_line("/proc/sys/kernel/yama/ptrace_scope");
    return stamp::path_for("audit-confirmed", key);
}

}  // namespace

std::string CallObserver::name() const {
    return observer_.plugin != nullptr ? observer_.plugin->name() : std::string{};
}

void CallObserver::start_choosing() {
    if (chosen_ || selecting_.valid() || runtime_.config.observer == "none") {
        return;
    }
    // The thread reads only the session's registry and configuration, which outlive it, and
    // inherits the runtime's blocked signals, which its signalfd alone takes.
    try {
        selecting_ = std::async(std::launch::async, [this] {
            return plugins::select_observer(runtime_.registry, runtime_.config);
        });
    } catch (const std::system_error &) {
        // No thread to be had (a process limit): choose selects it itself, as it did before.
    }
}

void CallObserver::choose(const exec::ExecPlan &plan) {
    if (chosen_) {
        return;
    }
    const auto &wanted = runtime_.config.observer;
    if (wanted == "none") {
        chosen_ = true;
        no_audit_reason_ = "the audit is switched off (audit.observer = \"none\")";
        return;
    }
    if (plan.confinement == "opt-out") {
        // An observer selected meanwhile watches nothing: it ends (its thread first) here.
        selecting_ = {};
        if (wanted != "auto") {
            // A trace of an unconfined call would be no evidence of anything.
            throw usage_error("--observer " + wanted + ": the backend '" + backend_.plugin->name() +
                              "' confines nothing, so there is nothing to audit");
        }
        chosen_ = true;
        no_audit_reason_ =
            "the backend '" + backend_.plugin->name() + "' confines nothing, so nothing is audited";
        return;
    }
    // Chosen only once an observer is: a selection that failed fails every later call of the
    // session too, rather than leave them unaudited.
    observer_ = selecting_.valid() ? selecting_.get()
                                   : plugins::select_observer(runtime_.registry, runtime_.config);
    chosen_ = true;
}

exec::ExecPlan CallObserver::wrap(const exec::ExecPlan &plan,
                                  const std::filesystem::path &trace_dir) const {
    const auto &ops = std::get<tea_observer_ops>(observer_.plugin->ops());
    // An observer older than ABI 1.1 takes the targetStart process for a launcher and drops what
    // it does until its next exec: with a plan that starts the target itself, that would be the
    // target's own accesses, unaudited.
    if (plan.audit.target_start_is_target && !observer_.plugin->capabilities().target_start_kind) {
        throw host_error("the observer '" + observer_.plugin->name() + "' (plugin ABI " +
                         std::to_string(observer_.plugin->abi_major()) + "." +
                         std::to_string(observer_.plugin->abi_minor()) +
                         ") cannot audit a plan whose target starts without a launcher (ABI 1.1); "
                         "upgrade the observer or choose another");
    }
    exec::ExecPlan shown = plan;
    shown.make_dirs.reset();  // the host's business, done before the wrap
    // The holder is never wrapped: it builds the confinement, and the observer follows the
    // process that joins it (the target's side). Shown without it, so no observer can change it.
    shown.holder.reset();
    shown.handoff_fd = -1;
    if (plan.holder) {
        shown.setup_mark_fd = -1;  // the holder's, not the wrapped process's
    }
    const nlohmann::json request{{"plan", nlohmann::json::parse(exec::to_json(shown))},
                                 {"traceDir", bytes::to_json(trace_dir.string())}};
    std::string text;
    try {
        text = observer_.instance->transform(ops.wrap, "wrap", request.dump());
    } catch (const std::exception &e) {
        throw host_error(e.what());
    }
    exec::ExecPlan wrapped;
    try {
        wrapped = exec::exec_plan_from_json(text);
    } catch (const std::exception &e) {
        throw runtime_failure("the observer '" + observer_.plugin->name() +
                              "' returned an invalid exec plan: " + e.what());
    }
    // An observer changes how the plan runs, never what the confinement recorded or lends.
    wrapped.confinement = plan.confinement;
    wrapped.lend = plan.lend;
    wrapped.run_as = plan.run_as;
    wrapped.child = plan.child;
    wrapped.report_json = plan.report_json;
    wrapped.sockets_left_reachable = plan.sockets_left_reachable;
    wrapped.audit = plan.audit;
    if (plan.holder) {
        if (wrapped.setup_mark_fd >= 0 ||
            std::any_of(wrapped.files.begin(), wrapped.files.end(),
                        [&](const exec::PlanFile &f) { return f.child_fd == plan.handoff_fd; })) {
            throw runtime_failure("the observer '" + observer_.plugin->name() +
                                  "' returned an invalid exec plan: it uses descriptor " +
                                  std::to_string(wrapped.setup_mark_fd >= 0 ? wrapped.setup_mark_fd
                                                                            : plan.handoff_fd) +
                                  ", which the host places for the plan's holder");
        }
        wrapped.holder = plan.holder;
        wrapped.handoff_fd = plan.handoff_fd;
        wrapped.setup_mark_fd = plan.setup_mark_fd;
    }
    return wrapped;
}

audit::Observation CallObserver::collect(const exec::ExecPlan &plan,
                                         const std::filesystem::path &trace_dir) const {
    const auto &ops = std::get<tea_observer_ops>(observer_.plugin->ops());
    nlohmann::json request{{"traceDir", bytes::to_json(trace_dir.string())},
                           {"initialCwd", bytes::to_json(plan.cwd)}};
    if (!plan.audit.target_start.empty()) {
        request["targetStart"] = bytes::to_json(plan.audit.target_start);
        request["targetStartKind"] = plan.audit.target_start_is_target ? "target" : "launcher";
    }
    try {
        return audit::observation_from_json(
            observer_.instance->transform(ops.collect, "collect", request.dump()));
    } catch (const std::exception &e) {
        // An observer that cannot say what it saw fails the command: no list is evidence.
        throw host_error("the observer '" + observer_.plugin->name() +
                         "' could not report the call: " + e.what());
    }
}

bool CallObserver::confirmed(const exec::ExecPlan &sample, std::size_t target_args,
                             const std::filesystem::path &private_root) {
    if (confirmed_) {
        return true;
    }
    stamp_ =
        confirmation_stamp(wrap(sample, private_root / "unused"), target_args, backend_, observer_);
    confirmed_ = stamp::present(stamp_);
    return confirmed_;
}

void CallObserver::confirm(const Executed &executed, const std::string &probe,
                           const std::string &backend, const std::filesystem::path &stderr_file) {
    if (executed.result.interrupted_by != 0) {
        throw Error{static_cast<ExitCode>(128 + executed.result.interrupted_by),
                    "interrupted while confirming the observer"};
    }
    const bool seen =
        executed.observation &&
        std::any_of(executed.observation->events.begin(), executed.observation->events.end(),
                    [&probe](const audit::ObservedAccess &e) {
                        return e.success && e.access == audit::Access::read &&
                               e.path_resolved == probe;
                    });
    if (seen) {
        stamp::write(stamp_);
        confirmed_ = true;
        return;
    }
    const auto &r = executed.result;
    const bool target_started = r.started && (!r.setup_marked || r.setup_reached) &&
                                executed.observation && executed.observation->target_started;
    if (!target_started) {
        // The probe never reached its target: what failed is the plan or the tracer, and their
        // own message says more than any guess.
        const auto failure =
            start_failure(r, executed.observation ? &*executed.observation : nullptr,
                          executed.observer_reason, name(), backend);
        const auto stderr_text = stderr_tail(stderr_file);
        throw host_error(
            "the observer '" + name() +
            "' did not see a confined process read its probe file: " + failure.sentence +
            (failure.detail.empty() ? std::string{} : " (" + failure.detail + ")") +
            ", so nothing of the probe was there to observe; " +
            (stderr_text.empty() ? std::string{"nothing on stderr"}
                                 : "its stderr ends:\n" + stderr_text));
    }
    std::string why = "call status " + std::to_string(r.status());
    if (executed.observation && !executed.observation->reason.empty()) {
        why += "; " + executed.observation->reason;
    }
    throw host_error(
        "the observer '" + name() + "' did not see a confined process read its probe file (" + why +
        "), so its audit cannot be trusted on this host. Tracing may be forbidden (the "
        "kernel.yama.ptrace_scope sysctl, a container without ptrace or seccomp); repair "
        "it, or run unaudited on purpose with --observer none.");
}

exec::LaunchSpec probe_launch_spec(const exec::LaunchSpec &call, files::RunDirectory &run_dir,
                                   const Runtime &runtime, std::string *probe_file) {
    const auto &private_root = run_dir.private_root();
    exec::LaunchSpec spec;
    spec.temp_dir = run_dir.make_directory("tmp-").string();
    spec.home = run_dir.make_directory("tea-evaluate-target-home-").string();
    // The call's own workspace and withheld paths, so the probe lends and covers nothing the
    // call itself would not; the probe only reads its file in the home.
    spec.workspace = call.workspace;
    if (within(call.workspace, private_root)) {
        // A trial's workspace lives beside its home in the run's directory; the probe's home is
        // elsewhere, so it takes an empty workspace beside its own home instead.
        spec.workspace = run_dir.make_directory("workspace-").string();
        ::chmod(spec.workspace.c_str(), 0755);
    }
    spec.cwd = spec.workspace;
    spec.withhold = call.withhold;
    const auto probe = spec.home + "/" + kProbeFile;
    std::ofstream{probe} << "probe\n";
    spec.argv = {"cat", probe};
    spec.env = {"PATH=/usr/bin:/bin", "LANG=C"};
    spec.runtime_prefix = runtime.paths.prefix.string();
    spec.helper_dir = runtime.paths.helper_dir.string();
    spec.observed = call.observed;  // the probe runs as the calls it vouches for will
    spec.identity = call.identity;
    *probe_file = probe;
    return spec;
}

}  // namespace tea::call
