#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "exec/call_runner.hpp"
#include "exec/environment.hpp"
#include "exec/ownership.hpp"
#include "fs/private_dirs.hpp"
#include "plugins/selection.hpp"
#include "util/error.hpp"

namespace tea::cli {
namespace {

std::filesystem::path absolute_path(const std::filesystem::path &p, const char *option) {
    std::error_code ec;
    auto out = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
    if (ec) {
        throw usage_error(std::string{option} + " " + p.string() + ": " + ec.message());
    }
    return out;
}

std::vector<std::string> call_environment(const ExecOptions &options) {
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

// Whether `outer` is `inner` or one of its ancestors.
bool contains(const std::filesystem::path &outer, const std::filesystem::path &inner) {
    auto o = outer.lexically_normal();
    auto i = inner.lexically_normal();
    auto [oe, ie] = std::mismatch(o.begin(), o.end(), i.begin(), i.end());
    return oe == o.end() || (std::next(oe) == o.end() && oe->empty());
}

// Writable directories that would open the runtime itself or the host to the target.
void check_call_paths(const exec::LaunchSpec &spec, const std::filesystem::path &private_root) {
    const std::filesystem::path workspace{spec.workspace};
    // A workspace over the private root would make every run's home writable.
    if (contains(workspace, private_root)) {
        throw host_error("the workspace " + spec.workspace + " contains the private root " +
                         private_root.string() +
                         ", where the target's home lives; choose a "
                         "smaller workspace");
    }
    for (const auto &w : spec.withhold) {
        if (contains(w, private_root)) {
            throw host_error("the withheld path " + w + " contains the private root " +
                             private_root.string() + ", where the target's home lives");
        }
    }
}

// Only the call's own directories may be lent to the sandbox identity; a
// plugin asking for anything else (/etc, say) is refused.
void check_lend(const exec::ExecPlan &plan, const exec::LaunchSpec &spec) {
    for (const auto &p : plan.lend.paths) {
        if (p != spec.workspace && p != spec.temp_dir && p != spec.home) {
            throw runtime_error("the backend asked to hand " + p +
                                " to the sandbox identity; only the workspace, the call's temp "
                                "directory and the home may be");
        }
    }
    for (const std::filesystem::path system :
         {"/", "/etc", "/usr", "/bin", "/lib", "/var/lib", "/root", "/home"}) {
        if (plan.lend.requested && contains(spec.workspace, system)) {
            throw host_error("the workspace " + spec.workspace + " holds " + system.string() +
                             ", which the runtime will not hand to the sandbox identity; choose a "
                             "project directory as the workspace");
        }
    }
}

exec::LaunchSpec launch_spec(const Runtime &runtime, const ExecOptions &options) {
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
        spec.withhold.push_back(absolute_path(w, "--withhold").string());
    }
    spec.runtime_prefix = runtime.paths.prefix.string();
    spec.helper_dir = runtime.paths.helper_dir.string();
    return spec;
}

exec::ExecPlan prepare(const plugins::Selected &backend, const exec::LaunchSpec &spec) {
    const auto &ops = std::get<tea_backend_ops>(backend.plugin->ops());
    std::string plan_json;
    try {
        plan_json = backend.instance->transform(ops.prepare, "prepare", exec::to_json(spec));
    } catch (const std::exception &e) {
        throw host_error(e.what());
    }
    try {
        return exec::exec_plan_from_json(plan_json);
    } catch (const std::exception &e) {
        throw runtime_error("the backend '" + backend.plugin->name() +
                            "' returned an invalid exec plan: " + e.what());
    }
}

// The target's stdin: what the runtime was given, unless it is a terminal.
// A target never gets the terminal, so it cannot push input into it.
exec::StdinSpec call_stdin() {
    if (::isatty(STDIN_FILENO) != 0) {
        return {exec::StdinSpec::Kind::null_device, {}};
    }
    return {exec::StdinSpec::Kind::inherit, {}};
}

constexpr int exit_timed_out = 124;

int not_started_status(const exec::CallResult &r) {
    if (r.start_errno == ENOENT) {
        return 127;  // as a shell reports a command it cannot find
    }
    if (r.start_errno == EACCES || r.start_errno == ENOEXEC) {
        return 126;
    }
    return static_cast<int>(ExitCode::runtime);
}

}  // namespace

int exec_command(const CommonOptions &common, const ExecOptions &options) {
    if (options.command.empty()) {
        throw usage_error(
            "exec: no command given (usage: tea-evaluate exec [options] -- CMD ARGS...)");
    }
    if (options.timeout_ms && *options.timeout_ms <= 0) {
        throw usage_error("--timeout: expected a positive number of milliseconds");
    }
    const auto started = std::chrono::steady_clock::now();
    auto phase = [&](const char *what) {
        spdlog::debug(
            "{} after {:.2f} ms", what,
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
                .count());
    };
    const auto runtime = load_runtime(common);
    phase("configuration and plugins loaded");
    auto backend = plugins::select_backend(runtime.registry, runtime.config);
    phase("backend selected and probed");
    const auto observer = plugins::select_observer(runtime.registry, runtime.config);
    if (observer.plugin != nullptr) {
        // The audit is wired in with the first observer plugin; until then an
        // observer that was asked for must not be silently ignored.
        throw usage_error("--observer " + observer.plugin->name() +
                          ": auditing a call is not available in this version");
    }
    auto spec = launch_spec(runtime, options);
    const auto private_root = fs::open_private_root(fs::default_private_root());
    if (const int n = fs::reclaim_leftovers(private_root); n > 0) {
        spdlog::info("reclaimed {} private directories a killed run left in {}", n,
                     private_root.string());
    }
    check_call_paths(spec, private_root);
    fs::RunDirectory run_dir{private_root};
    spec.temp_dir = run_dir.make_directory("tmp-").string();
    spec.home = run_dir.make_directory("tea-evaluate-target-home-").string();
    phase("private directories made");
    const auto plan = prepare(backend, spec);
    phase("plan prepared");
    check_lend(plan, spec);
    exec::OwnershipLoan loan;
    if (plan.lend.requested) {
        std::vector<std::filesystem::path> trees(plan.lend.paths.begin(), plan.lend.paths.end());
        std::vector<std::filesystem::path> kept(spec.withhold.begin(), spec.withhold.end());
        loan = exec::OwnershipLoan{trees, plan.lend.uid, plan.lend.gid, kept};
        if (loan.skipped_hard_links() > 0) {
            spdlog::warn(
                "{} files with several hard links stay owned by their owner and are not "
                "writable by the target",
                loan.skipped_hard_links());
        }
    }
    if (plan.confinement == "opt-out") {
        if (backend.chosen_by_auto) {
            // "auto" must never downgrade to an unconfined call.
            throw host_error("the backend '" + backend.plugin->name() +
                             "' chosen by confinement.backend = \"auto\" confines nothing; "
                             "select it by name if that is what you want");
        }
        spdlog::warn(
            "backend '{}' confines nothing: the target runs with your files, network "
            "and identity{}",
            backend.plugin->name(),
            spec.withhold.empty() ? "" : ", and --withhold is not enforced");
    }
    if (const int sig = Signals::instance().pending(); sig != 0) {
        return 128 + sig;
    }

    exec::RunOptions run;
    if (options.timeout_ms) {
        run.timeout = std::chrono::milliseconds{*options.timeout_ms};
    }
    run.kill_grace = runtime.config.call.kill_grace;
    run.out.cap_bytes = runtime.config.call.output_cap_bytes;
    run.err.cap_bytes = runtime.config.call.output_cap_bytes;
    // With --json stdout carries the record alone, so the target's output goes to stderr.
    run.out.tee_fd = common.json ? STDERR_FILENO : STDOUT_FILENO;
    run.err.tee_fd = STDERR_FILENO;
    run.in = call_stdin();
    run.signal_fd = Signals::instance().fd();
    phase("ownership lent");
    const auto result = exec::run_call(plan, run);
    phase("call ended");
    loan.restore();
    run_dir.remove();
    phase("cleaned up");

    int status = 0;
    if (!result.started) {
        status = not_started_status(result);
        spdlog::error("the target did not start: {}", result.start_error);
    } else if (result.interrupted_by != 0) {
        status = 128 + result.interrupted_by;
        spdlog::warn("interrupted by signal {}; the call was ended", result.interrupted_by);
    } else {
        status = result.status();
        if (result.timed_out) {
            // As timeout(1) reports it: whatever the target did on SIGTERM, a
            // call that ran out of time never passes for one that succeeded.
            status = exit_timed_out;
            spdlog::error("the call exceeded its timeout of {} ms and was ended",
                          *options.timeout_ms);
        }
    }
    if (common.json) {
        const nlohmann::json record{
            {"backend", backend.plugin->name()},
            {"confinement", plan.confinement},
            {"started", result.started},
            {"startError", result.start_error},
            {"exitCode", result.exit_code},
            {"signal", result.signal},
            {"timedOut", result.timed_out},
            {"interruptedBy", result.interrupted_by},
            {"elapsedMs", std::chrono::duration<double, std::milli>(result.elapsed).count()},
            {"stdoutBytes", result.out.total_bytes},
            {"stderrBytes", result.err.total_bytes},
            {"status", status},
            {"backendReport", nlohmann::json::parse(plan.report_json)},
        };
        std::cout << record.dump() << '\n';
    }
    return status;
}

}  // namespace tea::cli
