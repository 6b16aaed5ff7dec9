#include <spdlog/spdlog.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <tea/json_bytes.hpp>

#include "cli/budgets.hpp"
#include "cli/commands.hpp"
#include "cli/target_git.hpp"
#include "exec/terminal_text.hpp"
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

// A path as one line of the human list: control bytes (a newline in a file name) escaped, so
// a hostile name cannot forge lines of the report; so are C1 controls and bytes that are not
// well-formed UTF-8 (all bytes above ASCII when the locale is not UTF-8), with which a name would
// hide the report's lines on a terminal (exec/terminal_text.hpp).
std::string printable(const std::string &path) {
    const bool utf8 = exec::terminal_charset() == exec::Charset::utf8;
    std::string out;
    for (std::size_t i = 0; i < path.size();) {
        const auto u = static_cast<unsigned char>(path[i]);
        std::size_t shown = 0;
        if (u >= 0x20 && u < 0x7f && u != '\\') {
            shown = 1;
        } else if (u >= 0x80 && utf8) {
            shown = exec::TerminalText::shown_utf8_length(std::string_view{path}.substr(i));
        }
        if (shown > 0) {
            out.append(path, i, shown);
            i += shown;
            continue;
        }
        char buf[8];
        (void)std::snprintf(buf, sizeof buf, "\\x%02x", u);
        out += buf;
        ++i;
    }
    return out;
}

// The route's refusals, one line each, on stderr: what the target asked for and why it was not
// given it. Every field is the plugin's and may hold what a hostile target sent, so each is
// escaped as a path is.
void print_egress_refusals(const std::string &records_json) {
    const auto records = nlohmann::json::parse(records_json, nullptr, false);
    if (!records.is_object() || !records.contains("refusals") || !records["refusals"].is_array() ||
        records["refusals"].empty()) {
        return;
    }
    const auto text = [](const nlohmann::json &doc, const char *key) {
        return doc.contains(key) && doc[key].is_string() ? printable(doc[key].get<std::string>())
                                                         : std::string{};
    };
    const auto number = [](const nlohmann::json &doc, const char *key) {
        return doc.contains(key) && doc[key].is_number_unsigned() ? doc[key].get<std::uint64_t>()
                                                                  : std::uint64_t{0};
    };
    console::err() << "tea-evaluate: egress: the proxy refused " << records["refusals"].size()
                   << " distinct request" << (records["refusals"].size() == 1 ? "" : "s") << ":\n";
    for (const auto &r : records["refusals"]) {
        auto line = console::err();  // written whole at the end of the iteration
        line << "  " << number(r, "status") << ' ' << text(r, "host") << ':' << number(r, "port")
             << "  (" << text(r, "reason");
        if (const auto address = text(r, "address"); !address.empty()) {
            line << "; resolved to " << address;
        }
        line << "; " << number(r, "count") << "x)\n";
    }
    if (const auto omitted = number(records, "omitted"); omitted > 0) {
        console::err() << "  ... and " << omitted << " more refused requests not kept\n";
    }
}

namespace {

// exec --json's egressRefusals: the records' refusals (an empty list for a call without a route).
nlohmann::json egress_refusals(const std::string &records_json) {
    const auto records = nlohmann::json::parse(records_json, nullptr, false);
    if (records.is_object() && records.contains("refusals") && records["refusals"].is_array()) {
        return records["refusals"];
    }
    return nlohmann::json::array();
}

}  // namespace

void print_audit(const audit::AuditResult &audit) {
    if (!audit.audited) {
        console::err() << "tea-evaluate: audit: none (" << printable(audit.why_not) << ")\n";
        return;
    }
    if (!audit.complete) {
        console::err() << "tea-evaluate: audit: INCOMPLETE, the list below may miss accesses ("
                       << printable(audit.reason) << ")\n";
    }
    if (audit.findings.empty()) {
        console::err() << "tea-evaluate: audit (" << audit.observer
                       << "): no path outside the grants" << (audit.complete ? "" : " was seen")
                       << '\n';
        return;
    }
    console::err() << "tea-evaluate: audit (" << audit.observer << "): " << audit.findings.size()
                   << " path" << (audit.findings.size() == 1 ? "" : "s")
                   << " outside the grants:\n";
    for (const auto &f : audit.findings) {
        auto line = console::err();  // written whole at the end of the iteration
        // A reason may quote what the target named (an interpreter, a link's text): escaped too.
        line << "  " << printable(f.path) << "  (" << printable(f.reason);
        for (std::size_t i = 0; i < f.syscalls.size(); ++i) {
            line << (i == 0 ? "; " : ", ") << f.syscalls[i];
        }
        line << ")\n";
    }
    if (audit.omitted > 0) {
        console::err() << "  ... and " << audit.omitted << " more accesses not kept\n";
    }
}

int exec_command(const CommonOptions &common, const ExecOptions &options) {
    if (options.command.empty()) {
        throw usage_error(
            "exec: no command given (usage: tea-evaluate exec [options] -- CMD ARGS...)");
    }
    Session session{common};
    auto spec = session.launch_spec(options);
    // Lives until the call has ended: it holds the private repository the call reads.
    const auto git = give_exec_target_git(spec, session.private_root());
    if (!git.history.empty()) {
        spdlog::info("the workspace's git directory is withheld; history: {}", git.history);
    }
    const auto route_request = Session::egress_request(options);

    auto run = session.run_options(options);
    // With --json stdout carries the record alone, so the target's output goes to stderr.
    run.out.tee_fd = common.json ? STDERR_FILENO : STDOUT_FILENO;
    run.err.tee_fd = STDERR_FILENO;
    run.in = call_stdin();
    run.budget = configured_budget(session.runtime().config.budgets);
    const auto outcome = session.call(std::move(spec), run, route_request);
    const auto &result = outcome.result;

    int status = outcome.status;
    if (outcome.target_never_started && result.interrupted_by == 0) {
        // Tried twice (or stopped at its timeout), and neither time did the confinement reach
        // the target: the status is the confinement's (or the observer saw nothing), never the
        // target's, and passing it on would let a caller read a host failure as the command's.
        spdlog::error(
            "the confinement ended (status {}) before the target started{}: this host cannot "
            "confine or observe the call now (the confinement's own message, if any, is above; "
            "the sandbox account may have reached its process limit)",
            outcome.status, result.timed_out ? ", at the call's timeout" : ", twice");
        status = static_cast<int>(ExitCode::no_confine);
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
    const auto hits = budget_hits(result.budget);
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
            {"backendReport", nlohmann::json::parse(outcome.report_json)},
            {"identity", identity_record(outcome)},
            {"audit", audit::to_json(outcome.audit)},
            {"egress", nlohmann::json::parse(egress::items_to_json(outcome.egress))},
            {"egressRefusals", egress_refusals(outcome.egress_records)},
            {"budget", call_budget_record(result.budget, result.limits)},
            {"budgetHits", hits},
        };
        if (const auto records = nlohmann::json::parse(outcome.egress_records, nullptr, false);
            records.is_object() && records.contains("omitted")) {
            record["egressRefusalsOmitted"] = records["omitted"];
        }
        console::out() << record.dump(-1, ' ', console::on_terminal(stdout)) << '\n';
    }
    return status;
}

}  // namespace tea::cli
