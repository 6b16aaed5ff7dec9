#include <spdlog/spdlog.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "call/logins.hpp"
#include "cli/commands.hpp"
#include "cli/report.hpp"
#include "evaluation/budgets.hpp"
#include "evaluation/target_git.hpp"
#include "util/console.hpp"
#include "util/error.hpp"

namespace tea::cli {
namespace {

// The target's stdin: what the runtime was given, unless it is a terminal.
// A target never gets the terminal, so it cannot push input into it.
exec::StdinSpec call_stdin() {
    if (::isatty(STDIN_FILENO) != 0) {
        return {exec::StdinSpec::Kind::null_device, {}};
    }
    return {exec::StdinSpec::Kind::inherit, {}};
}

}  // namespace

int exec_command(const CommonOptions &common, const ExecOptions &options) {
    if (options.command.empty()) {
        throw usage_error(
            "exec: no command given (usage: tea-evaluate exec [options] -- CMD ARGS...)");
    }
    const auto session_ptr = open_session(common);
    auto &session = *session_ptr;
    auto spec = session.launch_spec(options);
    // Lives until the call has ended: it holds the private repository the call reads.
    const auto git = evaluation::give_exec_target_git(spec, session.private_root());
    if (!git.history.empty()) {
        spdlog::info("the workspace's git directory is withheld; history: {}", git.history);
    }
    const auto route_request = call::egress_request(options);
    call::Logins logins;
    if (options.login) {
        // The names --env passes stand for the entry's environmentKeys.
        std::vector<std::string> keys;
        for (const auto &item : options.env) {
            keys.push_back(item.substr(0, item.find('=')));
        }
        const auto &runtime = session.runtime();
        logins =
            call::Logins::grant(runtime.registry, runtime.config,
                                {{"exec", *options.login, options.command.front(), keys}}, true);
        logins.apply("exec", spec, true);
    }

    auto run = session.run_options(options);
    // With --json stdout carries the record alone, so the target's output goes to stderr.
    run.out.tee_fd = common.json ? STDERR_FILENO : STDOUT_FILENO;
    run.err.tee_fd = STDERR_FILENO;
    run.in = call_stdin();
    // The terminal never shows a secret: the output passes through the redactor first.
    run.out.redact = run.err.redact = logins.matcher();
    run.budget = evaluation::configured_budget(session.runtime().config.budgets);
    auto outcome = session.call(std::move(spec), run, route_request);
    const auto &result = outcome.result;
    // What the runtime prints of the call is the target's choice too (a path it opened, a host
    // it asked for): redacted with every secret, the file's rotated ones included.
    logins.settle(outcome);

    int status = outcome.status;
    if (outcome.target_never_started && result.interrupted_by == 0) {
        const auto &failure = outcome.start_failure;
        if (failure.side == call::FailedSide::target_exec) {
            // The target's own exec failed: its status is the shell's 126 or 127, as for a target
            // the runner itself could not start.
            spdlog::error("{}: {} (the launcher's own message, if any, is above)", failure.sentence,
                          failure.detail);
        } else {
            // Tried twice (or stopped at its timeout), and neither time did the confinement reach
            // the target: the status is the confinement's (or the observer saw nothing), never
            // the target's, and passing it on would let a caller read a host failure as the
            // command's.
            spdlog::error(
                "{}{}: this host cannot confine or observe the call now ({}the plan's own "
                "message, if any, is above)",
                failure.sentence, result.timed_out ? ", at the call's timeout" : ", twice",
                failure.detail.empty() ? "" : failure.detail + "; ");
            status = static_cast<int>(ExitCode::no_confine);
        }
    }
    const bool violation =
        outcome.audit.audited && (!outcome.audit.findings.empty() || !outcome.audit.complete);
    if (options.strict && result.interrupted_by == 0) {
        if (!outcome.audit.audited) {
            // --strict promises an audited call; an unaudited one cannot keep that promise.
            spdlog::error("--strict: the call was not audited ({})", outcome.audit.why_not);
            status = static_cast<int>(ExitCode::invalid);
        } else if (violation) {
            status = static_cast<int>(ExitCode::invalid);
        }
    }
    if (!common.quiet || violation) {
        print_audit(outcome.audit);
    }
    print_egress_refusals(outcome.egress_records);
    if (!outcome.sockets_left_reachable.empty()) {
        spdlog::warn(
            "{} host socket(s) stayed reachable from the target: the confinement did not mask "
            "them (backendReport.socketsLeftReachable in --json lists them; the backend's "
            "documentation says why, and what to change)",
            outcome.sockets_left_reachable.size());
    }
    const auto hits = evaluation::budget_hits(result.budget);
    for (const auto &hit : hits) {
        console::err() << "tea-evaluate: budget: " << hit["detail"].get<std::string>() << '\n';
    }
    if (common.json) {
        nlohmann::json record{
            {"backend", session.backend_name()},
            {"confinement", outcome.confinement},
            {"started", result.started},
            {"targetStarted", result.started && !outcome.target_never_started},
            {"startError", result.start_error},
            {"exitCode", result.exit_code},
            {"signal", result.signal},
            {"timedOut", result.timed_out},
            {"interruptedBy", result.interrupted_by},
            {"elapsedMs", std::chrono::duration<double, std::milli>(result.elapsed).count()},
            {"stdoutBytes", result.out.total_bytes},
            {"stderrBytes", result.err.total_bytes},
            {"status", status},
            {"callStatus", outcome.status},
            {"backendReport", outcome.backend_report},
            {"identity", call::identity_record(outcome)},
            {"audit", audit::to_json(outcome.audit)},
            {"egress", nlohmann::json::parse(egress::items_to_json(outcome.egress))},
            {"egressRefusals", call::egress_refusals(outcome.egress_records)},
            {"budget", evaluation::call_budget_record(result.budget, result.limits)},
            {"budgetHits", hits},
        };
        if (outcome.egress_records.contains("omitted")) {
            record["egressRefusalsOmitted"] = outcome.egress_records["omitted"];
        }
        console::out() << logins.redact_record(record).dump(
                              -1, ' ', console::on_terminal(stdout),
                              nlohmann::json::error_handler_t::replace)
                       << '\n';
    }
    return status;
}

}  // namespace tea::cli
