#include "call/session.hpp"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <string>

#include "audit/host_resolution.hpp"
#include "bridge/port_file.hpp"
#include "call/grants.hpp"
#include "call/target_program.hpp"
#include "exec/environment.hpp"
#include "util/error.hpp"
#include "util/signals.hpp"

namespace tea::call {
namespace {

// The variables a route gives the target. A call without a route loses any the host held: a
// host's proxy setting would name a proxy the confined target cannot reach, and a client that
// trusted it would fail in ways that look like the route's.
// What the confirmation probe's stderr keeps, for naming what failed.
constexpr std::uint64_t kProbeStderrCap = std::uint64_t{64} * 1024;

constexpr std::array<const char *, 3> kRouteVariables{"HTTPS_PROXY", "https_proxy",
                                                      "NODE_USE_ENV_PROXY"};

void route_environment(std::vector<std::string> &env, const egress::Route *route) {
    for (const char *name : kRouteVariables) {
        exec::unset_variable(env, name);
    }
    if (route != nullptr) {
        for (const auto &[name, value] : route->env) {
            exec::set_variable(env, name, value);  // the runtime's value replaces the host's
        }
    }
}

// The observer's report of a call, with what the runner saw that the observer could not: a
// trace without the target's start, and an observer stopped by the plan's own limits.
void complete_observation(audit::Observation &observation, const exec::CallResult &result) {
    if (result.started && !observation.target_started) {
        // The trace never shows the target's side starting: either nothing ran (bwrap
        // failed) or the observer saw nothing. Neither is an audit of the target.
        observation.complete = false;
        observation.reason += observation.reason.empty() ? "" : "; ";
        observation.reason += "the trace does not show the target starting";
    }
    // Attack: a target that fills its tmpfs to the memory budget makes the tracer the largest
    // process, and the OOM killer ends it. strace leaves its tracees running on: the call it had
    // stopped and not yet written runs unrecorded (its own filter then answers every traced call
    // ENOSYS), and a trace cut between two lines reads as complete. Processes that outlived the
    // plan's first process (the tracer) were not all seen. The end of a call (timeout, signal)
    // kills the namespaces before the tracer, so that one leaves none.
    if (result.outlived_leader != 0) {
        observation.complete = false;
        observation.reason += observation.reason.empty() ? "" : "; ";
        observation.reason += "the observer ended (" +
                              (result.signal != 0 ? "signal " + std::to_string(result.signal)
                                                  : "status " + std::to_string(result.exit_code)) +
                              ") while " + std::to_string(result.outlived_leader) +
                              " process(es) it traced still ran, unobserved from then on";
    }
    // The plan's limits bind the observer too (it runs in the child that sets them), and
    // nothing below it dies of them on its own account (bwrap reports its child's signal as
    // an exit code): a tracer stopped by one leaves a trace that ends early, which a cut
    // at a line's end would let pass for complete.
    if (result.signal == SIGXFSZ || result.signal == SIGXCPU) {
        observation.complete = false;
        observation.reason += observation.reason.empty() ? "" : "; ";
        observation.reason += std::string{"the observer was stopped by "} +
                              (result.signal == SIGXFSZ ? "SIGXFSZ" : "SIGXCPU") +
                              ": the call's file-size or CPU limit bound it";
    }
}

}  // namespace

CallSession::CallSession(Runtime runtime, const std::filesystem::path &private_root,
                         std::chrono::steady_clock::time_point started)
    : started_{started},
      runtime_{std::move(runtime)},
      backend_{[this] {
          phase("configuration and plugins loaded");
          auto selected = plugins::select_backend(runtime_.registry, runtime_.config);
          phase("backend selected and probed");
          return selected;
      }()},
      private_root_{files::open_private_root(private_root)},
      planner_{backend_},
      observer_{runtime_, backend_},
      handover_{private_root_} {
    if (const int n = files::reclaim_leftovers(private_root_); n > 0) {
        spdlog::info("reclaimed {} private directories a killed run left in {}", n,
                     private_root_.string());
    }
}

CallSession::~CallSession() = default;

void CallSession::phase(const char *what) const {
    if (!spdlog::should_log(spdlog::level::debug)) {
        return;  // measured only when shown
    }
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    spdlog::debug(
        "{} after {:.2f} ms ({} page faults)", what,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_)
            .count(),
        usage.ru_minflt + usage.ru_majflt);
}

void CallSession::search_by_target(std::filesystem::path dir) {
    handover_.search_by_target(std::move(dir));
}

const std::string &CallSession::backend_name() const {
    return backend_.plugin->name();
}

const plugins::Capabilities &CallSession::backend_capabilities() const {
    return backend_.plugin->capabilities();
}

exec::RunOptions CallSession::run_options(const CallOptions &options) const {
    return call::run_options(options, runtime_.config);
}

exec::LaunchSpec CallSession::launch_spec(const CallOptions &options) const {
    return call::launch_spec(options, runtime_.paths);
}

Executed CallSession::execute(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                              files::RunDirectory &run_dir, const exec::RunOptions &run,
                              bool observed) {
    Executed out;
    std::filesystem::path trace_dir;
    exec::ExecPlan to_run = plan;
    if (observed) {
        trace_dir = run_dir.make_directory("trace-");
        if (plan.run_as.requested) {
            // The observer runs as the identity the plan drops to (the runner drops before the
            // first exec), so that identity writes the trace. No target reaches the directory:
            // every confined view covers the private root.
            if (::chown(trace_dir.c_str(), plan.run_as.uid, plan.run_as.gid) != 0) {
                throw runtime_failure("cannot hand the trace directory " + trace_dir.string() +
                                      " to the sandbox identity: " + errno_text(errno));
            }
        }
        to_run = observer_.wrap(plan, trace_dir);
        phase("plan wrapped by the observer");
    }
    handover_.hand_to_target(spec, plan, run_dir);
    if (const int sig = Signals::instance().pending(); sig != 0) {
        out.result.interrupted_by = sig;
        return out;
    }
    phase("directories lent");
    if (staged_ && !observed) {
        auto started = std::move(*staged_);
        staged_.reset();
        out.result = started.finish(to_run);
    } else {
        staged_.reset();
        auto options = run;
        options.mount_namespace = handover_.mount_namespace();
        out.result = exec::run_call(to_run, options);
    }
    phase("call ended");
    handover_.give_back();  // what was lent by ownership is given back; the namespace goes
    if (observed) {
        out.observation = observer_.collect(plan, trace_dir);
        phase("trace collected");
        out.observer_reason = out.observation->reason;
        complete_observation(*out.observation, out.result);
    }
    return out;
}

// Runs the plan, and once more with a fresh plan when the confinement ended before the target's
// side started (the plan's setup mark untaken, or a trace without the target's start): nothing
// of the target ran, so a second attempt is safe. The usual cause is a host socket that went
// away between the backend's scan and bwrap binding over it, which another process on a busy
// host may do at any time.
Executed CallSession::execute_with_retry(const exec::LaunchSpec &spec, exec::ExecPlan &plan,
                                         files::RunDirectory &run_dir, const exec::RunOptions &run,
                                         bool observed) {
    auto executed = execute(spec, plan, run_dir, run, observed);
    const auto &r = executed.result;
    const bool trace_shows_no_start = executed.observation &&
                                      !executed.observation->target_started &&
                                      !plan.audit.target_start.empty();
    // The target's own exec failing is its answer (126, 127), not the confinement's: a second
    // try would fail the same way, and its warning would blame the host.
    if (r.started && (trace_shows_no_start || (r.setup_marked && !r.setup_reached)) &&
        r.interrupted_by == 0 && !r.timed_out && r.status() != 0 && !target_exec_failed(r)) {
        spdlog::warn(
            "the confinement ended (status {}) before the target started; trying once more "
            "with a fresh plan",
            r.status());
        plan = planner_.prepare(spec);
        if (!spec.unmade.empty() && !plan.make_dirs) {
            throw runtime_failure("the backend '" + backend_name() +
                                  "' returned an invalid exec plan: makeDirs: missing, though it "
                                  "answered it for the same call before");
        }
        check_plan(plan, spec, backend_name());
        make_planned_dirs(plan, run_dir);
        if (!spec.bridge.dir.empty()) {
            bridge::reset_bridge_directory(spec.bridge.dir);
        }
        for (const auto *stream : {&run.out, &run.err}) {
            // The runner creates output files afresh; nothing of the target reached them.
            if (!stream->file.empty()) {
                std::error_code ec;
                std::filesystem::remove(stream->file, ec);
            }
        }
        executed = execute(spec, plan, run_dir, run, observed);
    }
    return executed;
}

void CallSession::confirm_observer(const exec::ExecPlan &sample, const exec::LaunchSpec &call) {
    if (observer_.confirmed(sample, call.argv.size(), private_root_)) {
        return;
    }
    files::RunDirectory run_dir{private_root_};
    std::string probe;
    auto spec = probe_launch_spec(call, run_dir, runtime_, &probe);
    auto plan = planner_.prepare(spec);
    check_plan(plan, spec, backend_name());
    // The call's limits are for its target. They would bind strace here too, and a small file
    // size limit would cut this short trace into a false "cannot observe".
    plan.child.limits = {};
    exec::RunOptions run;
    run.timeout = std::chrono::seconds{30};
    run.kill_grace = runtime_.config.call.kill_grace;
    run.signal_fd = Signals::instance().fd();
    // Kept for the failure's sentence: the plan's own message says what failed in it.
    run.err.file = run_dir.make_directory("probe-") / "stderr";
    run.err.cap_bytes = kProbeStderrCap;
    const auto executed = execute_with_retry(spec, plan, run_dir, run, true);
    observer_.confirm(executed, probe, backend_name(), run.err.file);
    phase("observer confirmed");
}

// The call's route out, served for the call's duration from a directory of its own beneath the
// run's private parent; nullptr for a call that lists no host.
std::unique_ptr<egress::OpenRoute> CallSession::open_route(const EgressRequest &request,
                                                           files::RunDirectory &run_dir) {
    if (request.items.empty()) {
        return nullptr;
    }
    if (!egress_.plugin) {
        egress_ = plugins::select_egress(runtime_.registry, runtime_.config);
        phase("egress plugin selected and probed");
    }
    const auto dir = run_dir.make_directory("egress-");
    auto route =
        std::make_unique<egress::OpenRoute>(*egress_.instance, request.entry, request.items, dir);
    phase("egress route opened");
    return route;
}

// An unaudited call without a route out is started before its plan is complete (ABI 1.5): the
// backend names the process, the runner starts it, and the plan's costly part (the host socket
// walk) overlaps the process's own start. A traced call is not: its observer wraps the whole
// plan. Returns the staged answer when it is the call's whole plan.
std::optional<exec::ExecPlan> CallSession::stage(exec::LaunchSpec &spec,
                                                 const exec::RunOptions &run,
                                                 files::RunDirectory &run_dir) {
    route_environment(spec.env, nullptr);
    spec.staged = true;
    auto first = planner_.prepare(spec);
    const bool deferred = exec::has_deferred_files(first);
    if (deferred && first.confinement != "opt-out") {
        check_plan(first, spec, backend_name());
        spec.staged = false;
        phase("staged plan prepared");
        // Before its process starts: it enters the call's mount namespace as it starts.
        handover_.hand_to_target(spec, first, run_dir);
        phase("directories lent");
        auto options = run;
        options.mount_namespace = handover_.mount_namespace();
        staged_.emplace(first, options);
        phase("call started before its plan");
        return std::nullopt;
    }
    spec.staged = false;
    if (!deferred && (spec.unmade.empty() || first.make_dirs)) {
        return first;  // the backend did not stage it: this is its whole plan
    }
    // Otherwise asked again: an unconfined plan is not started early (its environment may still
    // change), and one silent on the unmade directories is prepared as before.
    return std::nullopt;
}

CallOutcome CallSession::call(exec::LaunchSpec spec, const exec::RunOptions &run,
                              const EgressRequest &route_request,
                              std::vector<std::filesystem::path> removed_after,
                              const ServiceBridgeRequest &service_bridge) {
    // Before anything of the call starts, and for every backend alike: a confinement's own
    // search, as the sandbox identity, would call a command that is nowhere "Permission denied".
    const auto program = find_target_program(spec.argv.at(0), spec.cwd);
    if (program.error != 0) {
        CallOutcome outcome;
        outcome.result = program_not_started(spec.argv[0], program);
        outcome.status = program_not_started_status(program);
        spdlog::error("the target did not start: {}", outcome.result.start_error);
        outcome.audit.why_not = "the target did not start";
        outcome.uid = ::getuid();
        outcome.gid = ::getgid();
        return outcome;
    }
    // For this call only, whatever ends it.
    struct Reset {
        Handover &handover;
        std::optional<exec::StartedCall> &staged;
        std::optional<exec::CallIdentity> &identity;
        ~Reset() {
            staged.reset();  // a call that failed before its run never runs its staged process
            handover.end();
            identity.reset();  // last: every process of the call has ended
        }
    } const reset{handover_, staged_, identity_};
    // The first call's observer is probed while its plan is prepared; not for the backend the
    // configuration names for opting out, whose plans have nothing to audit.
    if (backend_name() != runtime_.config.opt_out_backend) {
        observer_.start_choosing();
    }
    handover_.begin(std::move(removed_after));
    if (::geteuid() == 0 && runtime_.config.uid_range) {
        if (!backend_.plugin->capabilities().call_identity) {
            throw host_error(
                "[confinement] uid_range gives each call an identity of its own, and "
                "the backend '" +
                backend_.plugin->name() + "' (plugin ABI 1." +
                std::to_string(backend_.plugin->abi_minor()) +
                ") cannot take one (ABI 1.6); upgrade it, or remove uid_range");
        }
        identity_.emplace(runtime_.config.uid_range->first, runtime_.config.uid_range->last);
        spec.identity = exec::LaunchSpec::Identity{identity_->uid(), identity_->gid()};
        phase("identity taken");
    }
    if (!spec.login_files.empty() && !backend_.plugin->capabilities().login_files) {
        // A backend that cannot show the login's files would start the target without them.
        throw host_error("a login links files into the private home, and the backend '" +
                         backend_.plugin->name() + "' (plugin ABI 1." +
                         std::to_string(backend_.plugin->abi_minor()) +
                         ") cannot show them (ABI 1.8); upgrade it, or use the login's token");
    }
    if ((service_bridge.wanted || !spec.bridge.dir.empty()) &&
        !backend_.plugin->capabilities().bridge) {
        // A backend that cannot run the relay would start the service with no way in.
        throw host_error("a started service is reached through the bridge, and the backend '" +
                         backend_.plugin->name() + "' (plugin ABI 1." +
                         std::to_string(backend_.plugin->abi_minor()) +
                         ") cannot run its relay (ABI 1.9); upgrade it");
    }
    // Made on the host only when something needs it: a backend of ABI 1.3 provides the call's
    // temp directory (and a home made for this call alone) inside its confinement.
    files::RunDirectory run_dir{private_root_, files::RunDirectory::Creation::with_first_directory};
    if (!own_paths_) {
        own_paths_ = runtime_own_paths(runtime_);
    }
    check_call_paths(spec, private_root_, *own_paths_);
    const bool backend_makes = backend_.plugin->capabilities().unmade_directories;
    spec.unmade.clear();
    if (backend_makes) {
        spec.temp_dir = run_dir.name_directory("tmp-").string();
        spec.unmade.push_back(spec.temp_dir);
    } else {
        spec.temp_dir = run_dir.make_directory("tmp-").string();
    }
    const bool audited =
        runtime_.config.observer != "none" && !(observer_.chosen() && !observer_.watching());
    // A backend of ABI 1.4 may then keep its set-up out of the trace (a holder, see ExecPlan).
    spec.observed = audited && backend_.plugin->capabilities().observed;
    // The backend the configuration names for opting out leaves the target the host's HOME: a
    // home made for its call would be a directory nothing names. A login's files still need one
    // to lie in (the launch spec refuses them without), though that backend shows none of them.
    const bool wants_home =
        backend_name() != runtime_.config.opt_out_backend || !spec.login_files.empty();
    if (spec.home.empty() && wants_home) {
        // After an audited call the runtime resolves the links a target planted in its home,
        // so a home the audit may need stays on the host.
        if (backend_makes && !audited) {
            spec.home = run_dir.name_directory("tea-evaluate-target-home-").string();
            spec.unmade.push_back(spec.home);
        } else {
            spec.home = run_dir.make_directory("tea-evaluate-target-home-").string();
        }
    } else if (!spec.home.empty() &&
               std::filesystem::path{spec.home}.lexically_normal().parent_path().parent_path() !=
                   private_root_.lexically_normal()) {
        // A home elsewhere would escape the cover the confinement lays over the private root.
        throw runtime_failure("the home " + spec.home + " does not lie beneath the private root " +
                              private_root_.string());
    }
    if (service_bridge.wanted) {
        // Beneath the run's private parent like the egress socket's directory: covered from every
        // other call, removed with the call, reclaimed after a kill.
        const auto dir = run_dir.make_directory("bridge-");
        bridge::make_port_file(dir);
        spec.bridge = {dir.string(), (runtime_.paths.helper_dir / "tea-bridge-relay").string()};
        // The directory is shown at its own path, so the host's path is the one the target sees.
        spec.env.push_back("TEA_PORT_FILE=" + (dir / bridge::kPortFileName).string());
        if (service_bridge.dir_made) {
            service_bridge.dir_made(dir);
        }
    }
    phase("private directories made");
    const auto call_env = spec.env;
    std::optional<exec::ExecPlan> early;
    if (!audited && route_request.items.empty() && backend_.plugin->capabilities().staged) {
        early = stage(spec, run, run_dir);
    }
    auto route = open_route(route_request, run_dir);
    if (route) {
        spec.egress = {route->route().socket, route->route().port, route->route().shim};
    }
    route_environment(spec.env, route ? &route->route() : nullptr);
    exec::ExecPlan plan;
    if (early) {
        plan = std::move(*early);
        check_plan(plan, spec, backend_name());
        make_planned_dirs(plan, run_dir);
    } else {
        plan = planner_.prepare_complete(spec, run_dir);
    }
    if (plan.confinement == "opt-out" && (route || spec.env != call_env)) {
        // An unconfined target has the host's network: there is no route to give it, and its
        // environment stays exactly the call's.
        if (route) {
            spdlog::warn(
                "backend '{}' confines nothing: --egress is ignored, the target has the "
                "host's network",
                backend_name());
        }
        route.reset();
        spec.egress = {};
        spec.env = call_env;
        plan = planner_.prepare_complete(spec, run_dir);
    }
    phase("plan prepared");
    if (route && plan.lend.requested) {
        hand_route(route->route().socket, plan.lend);
    }
    if (plan.confinement == "opt-out") {
        if (backend_.chosen_by_auto) {
            // "auto" must never downgrade to an unconfined call.
            throw host_error("the backend '" + backend_name() +
                             "' chosen by confinement.backend = \"auto\" confines nothing; "
                             "select it by name if that is what you want");
        }
        if (!opt_out_warned_) {
            // Once per session: a run of many calls says it once, not once per call.
            spdlog::warn(
                "backend '{}' confines nothing: the target runs with your files, network "
                "and identity{}",
                backend_name(), spec.withhold.empty() ? "" : ", and nothing is withheld");
            opt_out_warned_ = true;
        }
    }
    const bool first_choice = !observer_.chosen();
    observer_.choose(plan);
    if (first_choice && observer_.watching()) {
        phase("observer selected and probed");
    }
    const bool observed = observer_.watching();
    if (observed) {
        confirm_observer(plan, spec);
    }
    auto executed = execute_with_retry(spec, plan, run_dir, run, observed);
    CallOutcome outcome;
    outcome.result = executed.result;
    outcome.confinement = plan.confinement;
    outcome.backend_report = nlohmann::json::parse(plan.report_json);
    outcome.sockets_left_reachable = plan.sockets_left_reachable;
    outcome.status = call_status(outcome.result, run);
    if (route) {
        outcome.egress = route_request.items;
        outcome.egress_records = route->close();
        route.reset();
        phase("egress route closed");
    }
    // The plan's setup mark left untaken, or a trace without the target's start: the
    // confinement ended before the target began, so its status is the infrastructure's.
    outcome.target_never_started =
        executed.result.started && executed.result.setup_marked && !executed.result.setup_reached;
    if (executed.observation) {
        outcome.target_never_started =
            outcome.target_never_started ||
            (executed.result.started && !executed.observation->target_started);
    }
    if (outcome.target_never_started) {
        outcome.start_failure =
            start_failure(executed.result, executed.observation ? &*executed.observation : nullptr,
                          executed.observer_reason, observer_.name(), backend_name());
        if (outcome.start_failure.side == FailedSide::target_exec) {
            outcome.start_failure.detail += "; the runtime found it at " + program.path;
        }
    }
    if (executed.observation) {
        audit::resolve_named_on_host(*executed.observation, host_view(spec, plan, private_root_));
        outcome.audit = audit::judge_observation(
            *executed.observation, call_grants(spec, plan, private_root_), observer_.name());
        phase("audit judged");
    } else {
        outcome.audit.why_not = observer_.no_audit_reason().empty() ? "no observer watched the call"
                                                                    : observer_.no_audit_reason();
    }
    if (plan.run_as.requested) {
        outcome.uid = plan.run_as.uid;
        outcome.gid = plan.run_as.gid;
        outcome.identity_from = spec.identity ? "range" : "backend";
    } else {
        outcome.uid = ::getuid();
        outcome.gid = ::getgid();
    }
    outcome.lent = handover_.lent();
    run_dir.remove();
    phase("cleaned up");
    return outcome;
}

exec::CallResult CallSession::grade(exec::LaunchSpec spec, const exec::RunOptions &run,
                                    std::string *confinement, const EgressRequest &route_request,
                                    nlohmann::json *egress_records) {
    spec.role = "grader";
    const auto grader_env = spec.env;
    // Only for a route: its socket's directory, removed with the grader's run.
    std::optional<files::RunDirectory> run_dir;
    std::unique_ptr<egress::OpenRoute> route;
    if (!route_request.items.empty()) {
        run_dir.emplace(private_root_, files::RunDirectory::Creation::with_first_directory);
        route = open_route(route_request, *run_dir);
        spec.egress = {route->route().socket, route->route().port, route->route().shim};
        route_environment(spec.env, &route->route());
    }
    auto plan = planner_.prepare(spec);
    if (plan.confinement == "opt-out" && route) {
        // An unconfined grader has the host's network: the route would be a promise nothing
        // keeps, so it is dropped and said, as a target's is.
        spdlog::warn(
            "backend '{}' confines nothing: the egress of '{}' is ignored, it has the "
            "host's network",
            backend_name(), route_request.entry);
        route.reset();
        spec.egress = {};
        spec.env = grader_env;
        plan = planner_.prepare(spec);
    }
    check_plan(plan, spec, backend_name());
    if (route) {
        // A backend that predates routed graders may ignore the route and leave the host's network
        // (where the proxy variables would name some host service): its plan must say it made one.
        const auto report = nlohmann::json::parse(plan.report_json, nullptr, false);
        if (!report.is_object() || report.value("network", "") != "egress") {
            throw host_error("the backend '" + backend_name() + "' did not give the grader of '" +
                             route_request.entry +
                             "' a network of its own behind its egress route (its plan reports "
                             "no \"network\": \"egress\"); upgrade it, or remove the egress");
        }
    }
    *confinement = plan.confinement;
    if (const int sig = Signals::instance().pending(); sig != 0) {
        exec::CallResult interrupted;
        interrupted.interrupted_by = sig;
        return interrupted;
    }
    auto result = exec::run_call(plan, run);
    if (route && egress_records != nullptr) {
        try {
            *egress_records = route->close();
        } catch (const std::exception &e) {
            // The grader's own records (its answer, to be redacted) come first: the route's
            // failure to report is said, not allowed to cut them short.
            spdlog::error("the egress route of '{}' gave no records: {}", route_request.entry,
                          e.what());
            *egress_records = {{"refusals", nlohmann::json::array()}, {"error", e.what()}};
        }
    }
    return result;
}

}  // namespace tea::call
