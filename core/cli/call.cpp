#include "cli/call.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tea/json_bytes.hpp>
#include <tea/stamp.hpp>

#include "audit/host_resolution.hpp"
#include "exec/environment.hpp"
#include "exec/lending.hpp"
#include "fs/private_dirs.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/paths.hpp"

namespace tea::cli {
namespace {

constexpr const char *kProbeFile = "tea-evaluate-audit-probe";

// The variables a route gives the target. A call without a route loses any the host held: a
// host's proxy setting would name a proxy the confined target cannot reach, and a client that
// trusted it would fail in ways that look like the route's.
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

std::filesystem::path absolute_path(const std::filesystem::path &p, const char *option) {
    std::error_code ec;
    auto out = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
    if (ec) {
        throw usage_error(std::string{option} + " " + p.string() + ": " + ec.message());
    }
    return out;
}

// A withheld path named through a link inside the workspace: the target can re-point that link
// between calls, and the next call would cover wherever it leads then, leaving the folder itself
// readable. Links outside the workspace (the host's, which no target can write) are followed.
void refuse_links_in_workspace(const std::filesystem::path &given,
                               const std::filesystem::path &workspace) {
    std::error_code ec;
    const auto lexical = std::filesystem::absolute(given, ec).lexically_normal();
    if (ec || !lexical.has_root_directory()) {
        return;  // absolute_path names what is wrong with it
    }
    std::filesystem::path real = lexical.root_path();
    for (const auto &part : lexical.relative_path()) {
        if (part.empty()) {
            continue;
        }
        const auto next = real / part;
        struct stat st {};
        if (::lstat(next.c_str(), &st) != 0) {
            return;  // nothing there: the existence check names it
        }
        if (!S_ISLNK(st.st_mode)) {
            real = next;
            continue;
        }
        real = std::filesystem::weakly_canonical(next, ec);
        if (within(next, workspace) && next != workspace) {
            throw usage_error("--withhold " + given.string() + ": " + next.string() +
                              " is a link inside the workspace, which a target can re-point "
                              "between calls; withhold the folder it leads to instead (" +
                              real.string() + ")");
        }
        if (ec) {
            return;
        }
    }
}

std::vector<std::string> call_environment(const CallOptions &options) {
    const auto host = exec::current_environment();
    auto env = options.clean_env ? exec::clean_environment(host) : host;
    for (const auto &item : options.env) {
        const auto eq = item.find('=');
        const std::string name = item.substr(0, eq);
        if (name.empty()) {
            throw usage_error("--env " + item + ": expected NAME=VALUE or NAME");
        }
        if (eq != std::string::npos) {
            exec::set_variable(env, name, item.substr(eq + 1));
        } else if (std::string value; exec::find_variable(host, name, &value) != nullptr) {
            exec::set_variable(env, name, value);
        }
    }
    return env;
}

// Writable directories that would open the runtime itself or the host to the target.
void check_call_paths(const exec::LaunchSpec &spec, const std::filesystem::path &private_root) {
    const std::filesystem::path workspace{spec.workspace};
    // A workspace over the private root would make every run's home writable.
    if (within(private_root, workspace)) {
        throw host_error("the workspace " + spec.workspace + " contains the private root " +
                         private_root.string() +
                         ", where the target's home lives; choose a "
                         "smaller workspace");
    }
    for (const auto &w : spec.withhold) {
        if (within(private_root, w)) {
            throw host_error("the withheld path " + w + " contains the private root " +
                             private_root.string() + ", where the target's home lives");
        }
        // A withheld path with nothing behind it covers nothing: if an earlier call moved the
        // folder (renamed a parent), its content is in the workspace under another name.
        struct stat st {};
        if (::lstat(w.c_str(), &st) != 0) {
            throw host_error("the withheld path " + w + " cannot be found (" + errno_text(errno) +
                             "); nothing was run. If an earlier call moved it, withhold it where "
                             "it is now, or restore it first");
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            throw host_error("the withheld path " + w +
                             " is neither a directory nor a regular file; nothing was run");
        }
    }
}

// Only the call's own directories may be lent to the sandbox identity; a
// plugin asking for anything else (/etc, say) is refused.
void check_lend(const exec::ExecPlan &plan, const exec::LaunchSpec &spec) {
    for (const auto &p : plan.lend.paths) {
        if (std::find(spec.unmade.begin(), spec.unmade.end(), p) != spec.unmade.end() &&
            (!plan.make_dirs || std::find(plan.make_dirs->begin(), plan.make_dirs->end(), p) ==
                                    plan.make_dirs->end())) {
            // A name with nothing behind it: lending it would chown whatever appears there.
            throw runtime_error("the backend asked to hand " + p +
                                " to the sandbox identity, a directory it left unmade");
        }
        if (p != spec.workspace && p != spec.temp_dir && p != spec.home) {
            throw runtime_error("the backend asked to hand " + p +
                                " to the sandbox identity; only the workspace, the call's temp "
                                "directory and the home may be");
        }
    }
    // A call given an identity of its own shares it with no other: a plan that runs the target,
    // or lends its directories, as another would let calls reach each other through it.
    if (spec.identity) {
        const auto other = [&](unsigned uid, unsigned gid) {
            return uid != spec.identity->uid || gid != spec.identity->gid;
        };
        if ((plan.run_as.requested && other(plan.run_as.uid, plan.run_as.gid)) ||
            (plan.lend.requested && other(plan.lend.uid, plan.lend.gid))) {
            throw runtime_error(
                "the backend planned the target as another identity than the "
                "call's own (uid " +
                std::to_string(spec.identity->uid) + ", [confinement] uid_range)");
        }
    }
    for (const std::filesystem::path system :
         {"/", "/etc", "/usr", "/bin", "/lib", "/var/lib", "/root", "/home"}) {
        if (plan.lend.requested && within(system, spec.workspace)) {
            throw host_error("the workspace " + spec.workspace + " holds " + system.string() +
                             ", which the runtime will not hand to the sandbox identity; choose a "
                             "project directory as the workspace");
        }
    }
}

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

// What the call may reach without being listed (see audit/judge.hpp).
audit::Grants call_grants(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                          const std::filesystem::path &private_root) {
    auto g = audit::default_os_grants();
    g.workspace_like = {spec.workspace, spec.temp_dir, spec.home};
    g.call_own = plan.audit.writable;
    if (spec.runtime_prefix != "/") {
        g.runtime = {spec.runtime_prefix};
    }
    g.system_paths = spec.system_paths;
    // The launch spec's read-only grants (a trial's private repository) are readable; one that
    // lies under the private root is excepted from it, as the home is.
    g.system_paths.insert(g.system_paths.end(), spec.read_only.begin(), spec.read_only.end());
    g.always_listed = spec.withhold;
    // A withheld path the runtime shows something else over (exec's private repository at the
    // workspace's .git, over the project's git directory) holds what the target reads there; the
    // bind keeps the path's own content out of view, so reading it is no access to that content.
    std::erase_if(g.always_listed, [&spec](const std::string &w) {
        return std::any_of(spec.read_only_over.begin(), spec.read_only_over.end(),
                           [&w](const exec::ReadOnlyOver &o) {
                               return std::filesystem::path{o.destination}.lexically_normal() ==
                                      std::filesystem::path{w}.lexically_normal();
                           });
    });
    g.always_listed.push_back(private_root.string());
    // A trial's workspace may lie in a run directory beneath the private root, beside its home.
    g.always_listed_exceptions = {spec.temp_dir, spec.home, spec.workspace};
    g.always_listed_exceptions.insert(g.always_listed_exceptions.end(), spec.read_only.begin(),
                                      spec.read_only.end());
    return g;
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

// Where the host shows what the target saw, for following what the observer could not place
// (audit/host_resolution.hpp): the workspace and home are the host's own directories, and the
// system paths and read-only grants are shown as the host has them; the sandbox's /dev, /proc,
// /sys and /run/user, the private root, the withheld paths and the plan's writable places (the
// confinement's own mounts, a /tmp of the call's own among them) are not.
audit::HostView host_view(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                          const std::filesystem::path &private_root) {
    audit::HostView view;
    view.shared_writable = {spec.workspace, spec.home};
    view.view_only = {"/dev", "/proc", "/sys", "/run/user", private_root.string()};
    view.view_only.insert(view.view_only.end(), spec.withhold.begin(), spec.withhold.end());
    // A grant beneath a cover (the private root's, a withheld path's) is not what the host shows.
    for (const auto *grants : {&spec.system_paths, &spec.read_only}) {
        for (const auto &grant : *grants) {
            if (std::none_of(view.view_only.begin(), view.view_only.end(),
                             [&](const std::string &own) { return within(grant, own); })) {
                view.shared_read_only.push_back(grant);
            }
        }
    }
    view.view_only.insert(view.view_only.end(), plan.audit.writable.begin(),
                          plan.audit.writable.end());
    view.view_only_writable = {"/dev/shm", spec.temp_dir};
    view.view_only_writable.insert(view.view_only_writable.end(), plan.audit.writable.begin(),
                                   plan.audit.writable.end());
    return view;
}

// Makes `dir` searchable by the group `gid` of the identity the target runs as, and by nobody else
// but its owner (0710): that identity can pass through it to what it was handed beneath, and no
// other user of the host can reach a name inside it, even one it read in `ps` (a call's working
// directory is on the helper's command line). False, with errno, on failure.
bool hand_search(const std::filesystem::path &dir, unsigned gid) {
    // Through one descriptor of the directory itself: a link put in its place is never followed.
    const UniqueFd fd{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    return fd && ::fchown(fd.get(), static_cast<uid_t>(-1), gid) == 0 &&
           ::fchmod(fd.get(), 0710) == 0;
}

// Hands the route to the identity the target runs as: the socket (still 0600) becomes its, and
// its directory searchable by that identity's group alone. No other user of the host can borrow
// the route, and another user's call cannot even reach the socket's path, so it never has to
// mask a socket that goes away when this call ends.
void hand_route(const std::string &socket, const exec::Lend &lend) {
    if (::fchownat(AT_FDCWD, socket.c_str(), lend.uid, lend.gid, AT_SYMLINK_NOFOLLOW) != 0 ||
        !hand_search(std::filesystem::path{socket}.parent_path(), lend.gid)) {
        throw host_error("cannot hand the egress socket " + socket +
                         " to the sandbox identity: " + errno_text(errno));
    }
}

// Makes the directories the plan asks for, all of them the call's own (checked by prepare).
void make_planned_dirs(const exec::ExecPlan &plan, fs::RunDirectory &run_dir) {
    for (const auto &d : plan.make_dirs.value_or(std::vector<std::string>{})) {
        run_dir.make_named(d);
    }
}

}  // namespace

Session::Session(const CommonOptions &common, bool opt_out)
    : started_{std::chrono::steady_clock::now()}, runtime_{load_runtime(common)} {
    phase("configuration and plugins loaded");
    if (opt_out) {
        if (common.backend && *common.backend != runtime_.config.opt_out_backend) {
            spdlog::warn("the evaluation opts out of confinement: --backend {} is not used",
                         *common.backend);
        }
        runtime_.config.backend = runtime_.config.opt_out_backend;
    }
    backend_ = plugins::select_backend(runtime_.registry, runtime_.config);
    phase("backend selected and probed");
    private_root_ = fs::open_private_root(fs::default_private_root());
    if (const int n = fs::reclaim_leftovers(private_root_); n > 0) {
        spdlog::info("reclaimed {} private directories a killed run left in {}", n,
                     private_root_.string());
    }
}

void Session::phase(const char *what) const {
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

std::vector<std::filesystem::path> Session::searched_directories(
    const exec::LaunchSpec &spec, const fs::RunDirectory &run_dir) const {
    auto dirs = searched_by_target_;
    if (run_dir.made()) {
        dirs.push_back(run_dir.path());  // the trace, the route's socket, a home made for the call
    }
    // The run directory a trial's workspace, home and private repository lie in.
    for (const auto &p : {spec.workspace, spec.home}) {
        const auto parent = std::filesystem::path{p}.parent_path();
        const bool unmade =
            std::find(spec.unmade.begin(), spec.unmade.end(), p) != spec.unmade.end();
        if (!p.empty() && !unmade && parent.parent_path() == private_root_) {
            dirs.push_back(parent);
        }
    }
    std::sort(dirs.begin(), dirs.end());
    dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
    return dirs;
}

void Session::search_by_target(std::filesystem::path dir) {
    searched_by_target_.push_back(std::move(dir));
}

std::string Session::observer_name() const {
    return observer_.plugin != nullptr ? observer_.plugin->name() : std::string{};
}

const std::string &Session::backend_name() const {
    return backend_.plugin->name();
}

exec::LaunchSpec Session::launch_spec(const CallOptions &options) const {
    if (options.command.empty()) {
        throw usage_error("no command given (after --)");
    }
    if (options.timeout_ms && *options.timeout_ms <= 0) {
        throw usage_error("--timeout: expected a positive number of milliseconds");
    }
    exec::LaunchSpec spec;
    spec.argv = options.command;
    spec.env = call_environment(options);
    const auto workspace = options.workspace
                               ? absolute_path(*options.workspace, "--workspace")
                               : absolute_path(std::filesystem::current_path(), "--workspace");
    std::error_code ec;
    if (!std::filesystem::is_directory(workspace, ec)) {
        throw usage_error("--workspace " + workspace.string() + ": not a directory");
    }
    spec.workspace = workspace.string();
    spec.cwd = spec.workspace;
    for (const auto &w : options.withhold) {
        refuse_links_in_workspace(w, workspace);
        spec.withhold.push_back(absolute_path(w, "--withhold").string());
    }
    for (const auto &s : options.system_paths) {
        // A relative system path would be judged against whatever directory the target is in.
        if (s.empty() || s[0] != '/') {
            throw usage_error("--system-path " + s + ": expected an absolute path");
        }
        const auto normal = std::filesystem::path{s}.lexically_normal().string();
        // "/" would grant everything and switch the audit off.
        if (normal == "/") {
            throw usage_error("--system-path /: a grant of the whole file system is refused");
        }
        spec.system_paths.push_back(normal);
        // A declared path that is a link grants where it leads too: the audit judges real paths.
        std::error_code link_error;
        const auto real = std::filesystem::weakly_canonical(normal, link_error).string();
        if (!link_error && real != normal && real != "/") {
            spec.system_paths.push_back(real);
        }
    }
    spec.runtime_prefix = runtime_.paths.prefix.string();
    spec.helper_dir = runtime_.paths.helper_dir.string();
    return spec;
}

exec::RunOptions Session::run_options(const CallOptions &options) const {
    exec::RunOptions run;
    if (options.timeout_ms) {
        run.timeout = std::chrono::milliseconds{*options.timeout_ms};
    }
    run.kill_grace = runtime_.config.call.kill_grace;
    run.out.cap_bytes = runtime_.config.call.output_cap_bytes;
    run.err.cap_bytes = runtime_.config.call.output_cap_bytes;
    run.signal_fd = Signals::instance().fd();
    return run;
}

exec::ExecPlan Session::prepare(const exec::LaunchSpec &spec) const {
    const auto &ops = std::get<tea_backend_ops>(backend_.plugin->ops());
    std::string plan_json;
    try {
        plan_json = backend_.instance->transform(ops.prepare, "prepare", exec::to_json(spec));
    } catch (const std::exception &e) {
        throw host_error(e.what());
    }
    exec::ExecPlan plan;
    try {
        plan = exec::exec_plan_from_json(plan_json);
    } catch (const std::exception &e) {
        throw runtime_error("the backend '" + backend_.plugin->name() +
                            "' returned an invalid exec plan: " + e.what());
    }
    for (const auto &f : plan.files) {
        if (f.deferred && !spec.staged) {
            // Only a staged call's process may start before its files are whole.
            throw runtime_error("the backend '" + backend_.plugin->name() +
                                "' returned an invalid exec plan: files: descriptor " +
                                std::to_string(f.child_fd) +
                                " is deferred in a plan the launch spec asked to be complete");
        }
    }
    for (const auto &d : plan.make_dirs.value_or(std::vector<std::string>{})) {
        if (std::find(spec.unmade.begin(), spec.unmade.end(), d) == spec.unmade.end()) {
            // The host makes only the call's own directories, never a path a plugin names.
            throw runtime_error("the backend '" + backend_.plugin->name() +
                                "' returned an invalid exec plan: makeDirs: " + d +
                                " is not a directory the launch spec left unmade");
        }
    }
    return plan;
}

exec::ExecPlan Session::prepare_call(exec::LaunchSpec &spec, fs::RunDirectory &run_dir) const {
    auto plan = prepare(spec);
    if (!spec.unmade.empty() && !plan.make_dirs) {
        // A backend built against ABI 1.3 that does not know of unmade directories (silence
        // would leave its target's TMPDIR or HOME naming nothing): made here, and asked again.
        for (const auto &d : spec.unmade) {
            run_dir.make_named(d);
        }
        spec.unmade.clear();
        plan = prepare(spec);
    }
    make_planned_dirs(plan, run_dir);
    return plan;
}

void Session::choose_observer(const exec::ExecPlan &plan) {
    if (observer_chosen_) {
        return;
    }
    observer_chosen_ = true;
    const auto &wanted = runtime_.config.observer;
    if (wanted == "none") {
        no_audit_reason_ = "the audit is switched off (audit.observer = \"none\")";
        return;
    }
    if (plan.confinement == "opt-out") {
        if (wanted != "auto") {
            // A trace of an unconfined call would be no evidence of anything.
            throw usage_error("--observer " + wanted + ": the backend '" + backend_.plugin->name() +
                              "' confines nothing, so there is nothing to audit");
        }
        no_audit_reason_ =
            "the backend '" + backend_.plugin->name() + "' confines nothing, so nothing is audited";
        return;
    }
    observer_ = plugins::select_observer(runtime_.registry, runtime_.config);
    phase("observer selected and probed");
}

exec::ExecPlan Session::wrap(const exec::ExecPlan &plan,
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
        throw runtime_error("the observer '" + observer_.plugin->name() +
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
            throw runtime_error("the observer '" + observer_.plugin->name() +
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

audit::Observation Session::collect(const exec::ExecPlan &plan,
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

// Hands the call's directories to the identity its target runs as, before anything resolves a
// path below them as that identity: the run directories it must pass through, and the plan's lent
// trees (exec/lending.hpp), kept in lending_ until the call has ended. Nothing for a plan that
// keeps the invoker's identity.
void Session::hand_to_target(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                             fs::RunDirectory &run_dir) {
    if (!plan.lend.requested && !plan.run_as.requested) {
        return;
    }
    // Once the call runs, `ps` shows these directories' names to every local user, who could
    // read a trial's copy of the project below them: from here on only the target's group
    // may pass through.
    const unsigned gid = plan.run_as.requested ? plan.run_as.gid : plan.lend.gid;
    for (const auto &dir : searched_directories(spec, run_dir)) {
        if (!hand_search(dir, gid)) {
            throw host_error("cannot make " + dir.string() +
                             " searchable by the sandbox identity: " + errno_text(errno));
        }
    }
    if (!plan.lend.requested || (lending_ && lent_for_ == plan.lend)) {
        return;
    }
    auto request = exec::Lending::Request::of(plan.lend, spec.withhold);
    // What this call's run directory holds goes with it at the call's end: its temp
    // directory, and a home made for this call alone. So do the trees the caller removes
    // once the call has ended (a trial's workspace and home, after its last call).
    request.disposable = removed_after_;
    for (const auto &p : {spec.temp_dir, spec.home}) {
        if (!p.empty() && std::filesystem::path{p}.parent_path() == run_dir.path()) {
            request.disposable.emplace_back(p);
        }
    }
    lending_.reset();
    lending_.emplace(request);
    lent_for_ = plan.lend;
    for (const auto &lent : lending_->lent()) {
        if (!lent.idmapped && warned_ownership_.insert(lent.path.string()).second) {
            spdlog::warn(
                "{} lies on {}, which refused an idmapped mount ({}): it is lent to the "
                "target's identity by ownership instead, which walks the whole tree before and "
                "after each call and changes the ctime of every entry",
                lent.path.string(), lent.filesystem, errno_text(lent.refusal));
        }
    }
    if (lending_->skipped_hard_links() > 0) {
        spdlog::warn(
            "{} files with several hard links stay owned by their owner and are not "
            "writable by the target",
            lending_->skipped_hard_links());
    }
}

// Runs a prepared plan: wrapped by the observer when `observed`, with the call's directories lent
// to the target's identity for the call's duration only.
Session::Executed Session::execute(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                                   fs::RunDirectory &run_dir, const exec::RunOptions &run,
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
                throw runtime_error("cannot hand the trace directory " + trace_dir.string() +
                                    " to the sandbox identity: " + errno_text(errno));
            }
        }
        to_run = wrap(plan, trace_dir);
        phase("plan wrapped by the observer");
    }
    hand_to_target(spec, plan, run_dir);
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
        options.mount_namespace = lending_ ? lending_->mount_namespace() : -1;
        out.result = exec::run_call(to_run, options);
    }
    phase("call ended");
    last_lent_ = lending_ ? lending_->lent() : std::vector<exec::Lending::Lent>{};
    lending_.reset();  // what was lent by ownership is given back; the namespace goes
    if (observed) {
        out.observation = collect(plan, trace_dir);
        phase("trace collected");
        if (out.result.started && !out.observation->target_started) {
            // The trace never shows the target's side starting: either nothing ran (bwrap
            // failed) or the observer saw nothing. Neither is an audit of the target.
            out.observation->complete = false;
            out.observation->reason += out.observation->reason.empty() ? "" : "; ";
            out.observation->reason += "the trace does not show the target starting";
        }
        // The plan's limits bind the observer too (it runs in the child that sets them), and
        // nothing below it dies of them on its own account (bwrap reports its child's signal as
        // an exit code): a tracer stopped by one leaves a trace that ends early, which a cut
        // at a line's end would let pass for complete.
        if (out.result.signal == SIGXFSZ || out.result.signal == SIGXCPU) {
            out.observation->complete = false;
            out.observation->reason += out.observation->reason.empty() ? "" : "; ";
            out.observation->reason += std::string{"the observer was stopped by "} +
                                       (out.result.signal == SIGXFSZ ? "SIGXFSZ" : "SIGXCPU") +
                                       ": the call's file-size or CPU limit bound it";
        }
    }
    return out;
}

// Runs the plan, and once more with a fresh plan when the confinement ended before the target's
// side started (the plan's setup mark untaken, or a trace without the target's start): nothing
// of the target ran, so a second attempt is safe. The usual cause is a host socket that went
// away between the backend's scan and bwrap binding over it, which another process on a busy
// host may do at any time.
Session::Executed Session::execute_with_retry(const exec::LaunchSpec &spec, exec::ExecPlan &plan,
                                              fs::RunDirectory &run_dir,
                                              const exec::RunOptions &run, bool observed) {
    auto executed = execute(spec, plan, run_dir, run, observed);
    const auto &r = executed.result;
    const bool trace_shows_no_start = executed.observation &&
                                      !executed.observation->target_started &&
                                      !plan.audit.target_start.empty();
    if (r.started && (trace_shows_no_start || (r.setup_marked && !r.setup_reached)) &&
        r.interrupted_by == 0 && !r.timed_out && r.status() != 0) {
        spdlog::warn(
            "the confinement ended (status {}) before the target started; trying once more "
            "with a fresh plan",
            r.status());
        plan = prepare(spec);
        if (!spec.unmade.empty() && !plan.make_dirs) {
            throw runtime_error("the backend '" + backend_.plugin->name() +
                                "' returned an invalid exec plan: makeDirs: missing, though it "
                                "answered it for the same call before");
        }
        make_planned_dirs(plan, run_dir);
        check_lend(plan, spec);
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

// Before the first audited call: a traced, confined reader of a probe file must be seen reading
// it, or the audit's empty list would be no evidence of anything.
void Session::confirm_observer(const exec::ExecPlan &sample, const exec::LaunchSpec &call) {
    if (observer_confirmed_) {
        return;
    }
    const auto stamp = confirmation_stamp(wrap(sample, private_root_ / "unused"), call.argv.size(),
                                          backend_, observer_);
    if (stamp::present(stamp)) {
        observer_confirmed_ = true;
        return;
    }
    fs::RunDirectory run_dir{private_root_};
    exec::LaunchSpec spec;
    spec.temp_dir = run_dir.make_directory("tmp-").string();
    spec.home = run_dir.make_directory("tea-evaluate-target-home-").string();
    // The call's own workspace and withheld paths, so the probe lends and covers nothing the
    // call itself would not; the probe only reads its file in the home.
    spec.workspace = call.workspace;
    if (within(call.workspace, private_root_)) {
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
    spec.runtime_prefix = runtime_.paths.prefix.string();
    spec.helper_dir = runtime_.paths.helper_dir.string();
    spec.observed = call.observed;  // the probe runs as the calls it vouches for will
    spec.identity = call.identity;
    auto plan = prepare(spec);
    check_lend(plan, spec);
    // The call's limits are for its target. They would bind strace here too, and a small file
    // size limit would cut this short trace into a false "cannot observe".
    plan.child.limits = {};
    exec::RunOptions run;
    run.timeout = std::chrono::seconds{30};
    run.kill_grace = runtime_.config.call.kill_grace;
    run.signal_fd = Signals::instance().fd();
    const auto executed = execute_with_retry(spec, plan, run_dir, run, true);
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
    if (!seen) {
        std::string why = "call status " + std::to_string(executed.result.status());
        if (!executed.result.started) {
            why = executed.result.start_error;
        } else if (executed.observation && !executed.observation->reason.empty()) {
            why += "; " + executed.observation->reason;
        }
        throw host_error(
            "the observer '" + observer_.plugin->name() +
            "' did not see a confined process read its probe file (" + why +
            "), so its audit cannot be trusted on this host. Tracing may be forbidden (the "
            "kernel.yama.ptrace_scope sysctl, a container without ptrace or seccomp); repair "
            "it, or run unaudited on purpose with --observer none.");
    }
    stamp::write(stamp);
    observer_confirmed_ = true;
    phase("observer confirmed");
}

EgressRequest Session::egress_request(const CallOptions &options) {
    EgressRequest request;
    for (const auto &text : options.egress) {
        request.items.push_back(egress::parse_item(text));
    }
    if (!options.command.empty()) {
        request.entry = std::filesystem::path{options.command.front()}.filename().string();
    }
    if (request.entry.empty()) {
        request.entry = "exec";
    }
    return request;
}

// The call's route out, served for the call's duration from a directory of its own beneath the
// run's private parent; nullptr for a call that lists no host.
std::unique_ptr<egress::Session> Session::open_route(const EgressRequest &request,
                                                     fs::RunDirectory &run_dir) {
    if (request.items.empty()) {
        return nullptr;
    }
    if (!egress_.plugin) {
        egress_ = plugins::select_egress(runtime_.registry, runtime_.config);
        phase("egress plugin selected and probed");
    }
    const auto dir = run_dir.make_directory("egress-");
    auto route =
        std::make_unique<egress::Session>(*egress_.instance, request.entry, request.items, dir);
    phase("egress route opened");
    return route;
}

CallOutcome Session::call(exec::LaunchSpec spec, const exec::RunOptions &run,
                          const EgressRequest &route_request,
                          std::vector<std::filesystem::path> removed_after) {
    // For this call only: a later call must not take its trees as ones to be removed.
    struct Reset {
        std::vector<std::filesystem::path> &trees;
        std::optional<exec::StartedCall> &staged;
        std::optional<exec::Lending> &lending;
        std::optional<exec::CallIdentity> &identity;
        ~Reset() {
            trees.clear();
            staged.reset();  // a call that failed before its run never runs its staged process
            lending.reset();
            identity.reset();  // last: every process of the call has ended
        }
    } const reset{removed_after_, staged_, lending_, identity_};
    removed_after_ = std::move(removed_after);
    last_lent_.clear();
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
    // Made on the host only when something needs it: a backend of ABI 1.3 provides the call's
    // temp directory (and a home made for this call alone) inside its confinement.
    fs::RunDirectory run_dir{private_root_, fs::RunDirectory::Creation::with_first_directory};
    check_call_paths(spec, private_root_);
    const bool backend_makes = backend_.plugin->capabilities().unmade_directories;
    spec.unmade.clear();
    if (backend_makes) {
        spec.temp_dir = run_dir.name_directory("tmp-").string();
        spec.unmade.push_back(spec.temp_dir);
    } else {
        spec.temp_dir = run_dir.make_directory("tmp-").string();
    }
    const bool audited =
        runtime_.config.observer != "none" && !(observer_chosen_ && !observer_.plugin);
    // A backend of ABI 1.4 may then keep its set-up out of the trace (a holder, see ExecPlan).
    spec.observed = audited && backend_.plugin->capabilities().observed;
    if (spec.home.empty()) {
        // After an audited call the runtime resolves the links a target planted in its home,
        // so a home the audit may need stays on the host.
        if (backend_makes && !audited) {
            spec.home = run_dir.name_directory("tea-evaluate-target-home-").string();
            spec.unmade.push_back(spec.home);
        } else {
            spec.home = run_dir.make_directory("tea-evaluate-target-home-").string();
        }
    } else if (std::filesystem::path{spec.home}.lexically_normal().parent_path().parent_path() !=
               private_root_.lexically_normal()) {
        // A home elsewhere would escape the cover the confinement lays over the private root.
        throw runtime_error("the home " + spec.home + " does not lie beneath the private root " +
                            private_root_.string());
    }
    phase("private directories made");
    const auto call_env = spec.env;
    // An unaudited call without a route out is started before its plan is complete (ABI 1.5):
    // the backend names the process, the runner starts it, and the plan's costly part (the host
    // socket walk) overlaps the process's own start. A traced call is not: its observer wraps
    // the whole plan.
    std::optional<exec::ExecPlan> early;
    if (!audited && route_request.items.empty() && backend_.plugin->capabilities().staged) {
        route_environment(spec.env, nullptr);
        spec.staged = true;
        auto first = prepare(spec);
        spec.staged = false;
        const bool deferred = exec::has_deferred_files(first);
        if (deferred && first.confinement != "opt-out") {
            check_lend(first, spec);
            phase("staged plan prepared");
            // Before its process starts: it enters the call's mount namespace as it starts.
            hand_to_target(spec, first, run_dir);
            phase("directories lent");
            auto options = run;
            options.mount_namespace = lending_ ? lending_->mount_namespace() : -1;
            staged_.emplace(first, options);
            phase("call started before its plan");
        } else if (!deferred && (spec.unmade.empty() || first.make_dirs)) {
            early = std::move(first);  // the backend did not stage it: this is its whole plan
        }
        // Otherwise asked again below: an unconfined plan is not started early (its environment
        // may still change), and one silent on the unmade directories is prepared as before.
    }
    auto route = open_route(route_request, run_dir);
    if (route) {
        spec.egress = {route->route().socket, route->route().port, route->route().shim};
    }
    route_environment(spec.env, route ? &route->route() : nullptr);
    exec::ExecPlan plan;
    if (early) {
        plan = std::move(*early);
        make_planned_dirs(plan, run_dir);
    } else {
        plan = prepare_call(spec, run_dir);
    }
    if (plan.confinement == "opt-out" && (route || spec.env != call_env)) {
        // An unconfined target has the host's network: there is no route to give it, and its
        // environment stays exactly the call's.
        if (route) {
            spdlog::warn(
                "backend '{}' confines nothing: --egress is ignored, the target has the "
                "host's network",
                backend_.plugin->name());
        }
        route.reset();
        spec.egress = {};
        spec.env = call_env;
        plan = prepare_call(spec, run_dir);
    }
    phase("plan prepared");
    check_lend(plan, spec);
    if (route && plan.lend.requested) {
        hand_route(route->route().socket, plan.lend);
    }
    if (plan.confinement == "opt-out") {
        if (backend_.chosen_by_auto) {
            // "auto" must never downgrade to an unconfined call.
            throw host_error("the backend '" + backend_.plugin->name() +
                             "' chosen by confinement.backend = \"auto\" confines nothing; "
                             "select it by name if that is what you want");
        }
        if (!opt_out_warned_) {
            // Once per session: a run of many calls says it once, not once per call.
            spdlog::warn(
                "backend '{}' confines nothing: the target runs with your files, network "
                "and identity{}",
                backend_.plugin->name(), spec.withhold.empty() ? "" : ", and nothing is withheld");
            opt_out_warned_ = true;
        }
    }
    choose_observer(plan);
    const bool observed = static_cast<bool>(observer_.plugin);
    if (observed) {
        confirm_observer(plan, spec);
    }
    auto executed = execute_with_retry(spec, plan, run_dir, run, observed);
    CallOutcome outcome;
    outcome.result = executed.result;
    outcome.confinement = plan.confinement;
    outcome.report_json = plan.report_json;
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
        audit::resolve_named_on_host(*executed.observation, host_view(spec, plan, private_root_));
        outcome.audit =
            audit::judge_observation(*executed.observation, call_grants(spec, plan, private_root_),
                                     observer_.plugin->name());
        phase("audit judged");
    } else {
        outcome.audit.why_not =
            no_audit_reason_.empty() ? "no observer watched the call" : no_audit_reason_;
    }
    if (plan.run_as.requested) {
        outcome.uid = plan.run_as.uid;
        outcome.gid = plan.run_as.gid;
        outcome.identity_from = spec.identity ? "range" : "backend";
    } else {
        outcome.uid = ::getuid();
        outcome.gid = ::getgid();
    }
    outcome.lent = last_lent_;
    run_dir.remove();
    phase("cleaned up");
    return outcome;
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

exec::CallResult Session::grade(exec::LaunchSpec spec, const exec::RunOptions &run,
                                std::string *confinement) {
    spec.role = "grader";
    const auto plan = prepare(spec);
    if (plan.lend.requested || plan.run_as.requested) {
        // A grader keeps the invoking identity; a plan that hands it anything is not a grader's.
        throw runtime_error("the backend '" + backend_name() +
                            "' answered a grader's launch spec with a target's plan");
    }
    *confinement = plan.confinement;
    if (const int sig = Signals::instance().pending(); sig != 0) {
        exec::CallResult interrupted;
        interrupted.interrupted_by = sig;
        return interrupted;
    }
    return exec::run_call(plan, run);
}

}  // namespace tea::cli
