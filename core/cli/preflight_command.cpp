// preflight: runs the call on pristine copies of the workspace (the legs, each with a new home)
// and names every path outside the grants that each leg opened, which every real run would open
// too. Exit 3 when there is one, 12 when the host cannot confine or audit the call at all.
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <tea/json_bytes.hpp>
#include <vector>

#include "cli/commands.hpp"
#include "cli/report.hpp"
#include "evaluation/budgets.hpp"
#include "evaluation/historical_probes.hpp"
#include "evaluation/preflight_legs.hpp"
#include "evaluation/trials.hpp"
#include "files/private_dirs.hpp"
#include "util/console.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::cli {
namespace {

namespace stdfs = std::filesystem;

// preflight EVAL_DIR: every probe's call on pristine workspaces, in `legs` legs.
int preflight_evaluation(const CommonOptions &common, const stdfs::path &folder, int legs) {
    auto opened = open_evaluation(common, folder);
    if (!opened) {
        return static_cast<int>(ExitCode::usage);
    }
    const auto &ev = opened->ev;
    auto &session = *opened->session;
    if (!ev.confinement) {
        console::err()
            << "tea-evaluate: preflight: the evaluation opts out of confinement; its targets "
               "run unconfined and unaudited, so there is nothing to check\n";
        return 0;
    }
    files::RunDirectory private_dir{session.private_root()};
    evaluation::check_targets(ev, opened->source, private_dir);
    evaluation::RunState state{ev, session, opened->source, "preflight"};
    state.revisions = evaluation::check_revisions(ev, opened->source, private_dir);
    state.logins = std::move(opened->logins);
    // The legs' calls have the trials' budgets (their file system stays the private root's).
    state.budget = evaluation::configured_budget(session.runtime().config.budgets);
    state.records = private_dir.make_directory("preflight-records-");
    const auto progress = progress_lines(common.quiet);
    std::map<std::string, int> seen;
    std::map<std::string, std::string> reasons;
    bool incomplete = false;
    for (int leg = 1; leg <= legs; ++leg) {
        // Each leg is a pristine workspace and a new home, as each trial of a run would be.
        const auto workspace = private_dir.make_directory("workspace-");
        const auto home = private_dir.make_directory("tea-evaluate-target-home-");
        ::chmod(workspace.c_str(), 0755);
        const auto repository = evaluation::prepare_workspace(state, workspace, private_dir);
        const auto label = "preflight leg " + std::to_string(leg) + "/" + std::to_string(legs);
        const auto calls =
            evaluation::run_calls(state, leg, label, state.records / std::to_string(leg), workspace,
                                  home, repository, private_dir, *progress);
        if (calls.interrupted != 0) {
            return 128 + calls.interrupted;
        }
        if (!calls.audited_all) {
            throw host_error("preflight needs audited calls, and a call of leg " +
                             std::to_string(leg) + " was not audited");
        }
        incomplete = incomplete || calls.lossy;
        if (calls.truncated > 0) {
            console::err() << "tea-evaluate: preflight: " << calls.truncated << " call"
                           << (calls.truncated == 1 ? "" : "s") << " of leg " << leg << " left "
                           << calls.sockets_left_reachable.size()
                           << " host socket(s) reachable (the confinement did not mask them); "
                              "a run records them in hostSocketTruncation\n";
        }
        for (const auto &path : calls.observed) ++seen[path];
        reasons.insert(calls.reasons.begin(), calls.reasons.end());
        files::remove_tree(workspace);
        if (!repository.empty()) files::remove_tree(repository);
        files::remove_tree(home);
    }
    std::vector<std::string> every;
    for (const auto &[path, n] : seen) {
        if (n == legs) every.push_back(path);
    }
    if (!every.empty()) {
        console::err() << "tea-evaluate: preflight: every leg opened " << every.size() << " path"
                       << (every.size() == 1 ? "" : "s")
                       << " outside the grants; every trial will too (declare what an entry "
                          "legitimately reads in its systemPaths):\n";
        for (const auto &path : every) {
            console::err() << "  " << printable(state.logins.redact(path)) << "  ("
                           << printable(reasons[path]) << ")\n";
        }
    } else {
        console::err() << "tea-evaluate: preflight: no path outside the grants in every leg\n";
    }
    if (incomplete) {
        console::err() << "tea-evaluate: preflight: the audit of a leg is incomplete, so it proves "
                          "nothing\n";
    }
    if (common.json) {
        console::out() << state.logins
                              .redact_record(
                                  nlohmann::json{{"everyLeg", bytes::list_to_json(every)},
                                                 {"complete", !incomplete}})
                              .dump(-1, ' ', console::on_terminal(stdout),
                                    nlohmann::json::error_handler_t::replace)
                       << '\n';
    }
    return every.empty() && !incomplete ? 0 : static_cast<int>(ExitCode::invalid);
}

}  // namespace

int preflight_command(const CommonOptions &common, const PreflightOptions &options) {
    if (options.command.empty()) {
        throw usage_error(
            "preflight: nothing to check (usage: tea-evaluate preflight EVAL_DIR, or "
            "tea-evaluate preflight [options] -- CMD ARGS...)");
    }
    if (options.legs < 2) {
        // One leg cannot tell a path the target always opens from one it happened to open.
        throw usage_error("--legs: expected at least 2");
    }
    if (std::error_code ec;
        options.command.size() == 1 && stdfs::is_directory(options.command.front(), ec)) {
        // A directory is never a command: it is an evaluation folder.
        return preflight_evaluation(common, options.command.front(), options.legs);
    }
    const auto session_ptr = open_session(common);
    auto &session = *session_ptr;
    const auto pristine = session.launch_spec(options);
    const auto route_request = call::egress_request(options);
    evaluation::LegsDirectory legs_dir;
    session.search_by_target(legs_dir.path());

    const auto run = session.run_options(options);

    std::map<std::string, std::size_t> seen;  // path -> legs that listed it
    std::map<std::string, audit::Finding> first;
    nlohmann::json legs = nlohmann::json::array();
    bool incomplete = false;
    for (int leg = 1; leg <= options.legs; ++leg) {
        auto spec = pristine;
        // A random part: until its first call, the legs' directory is searchable by everyone when
        // the runtime is root, and a name another user could guess would hand them the copy.
        const auto workspace =
            legs_dir.path() / ("leg-" + std::to_string(leg) + "-" + files::random_token());
        std::size_t skipped = 0;
        try {
            skipped = evaluation::copy_workspace(pristine.workspace, workspace);
        } catch (const stdfs::filesystem_error &e) {
            throw runtime_failure("cannot copy the workspace " + pristine.workspace + " for leg " +
                                  std::to_string(leg) + ": " + e.what());
        }
        if (skipped > 0) {
            spdlog::warn("leg {}: {} special files of the workspace were not copied", leg, skipped);
        }
        spec.workspace = workspace.string();
        spec.cwd = spec.workspace;
        // A withheld folder inside the workspace was copied with it: withhold the copy too, or
        // the leg would hand the target what every real run hides.
        for (const auto &w : pristine.withhold) {
            const auto rel = stdfs::path{w}.lexically_relative(pristine.workspace);
            if (!rel.empty() && *rel.begin() != "..") {
                spec.withhold.push_back((workspace / rel).lexically_normal().string());
            }
        }
        const auto outcome = session.call(std::move(spec), run, route_request);
        if (outcome.result.interrupted_by != 0) {
            return 128 + outcome.result.interrupted_by;
        }
        if (!outcome.audit.audited) {
            throw host_error("preflight needs an audited call, and this one was not: " +
                             outcome.audit.why_not);
        }
        console::err() << "tea-evaluate: preflight leg " << leg << ": status " << outcome.status
                       << ", " << outcome.audit.findings.size() << " path"
                       << (outcome.audit.findings.size() == 1 ? "" : "s") << " outside the grants"
                       << (outcome.audit.complete
                               ? ""
                               : ", audit INCOMPLETE: " + printable(outcome.audit.reason))
                       << '\n';
        print_egress_refusals(outcome.egress_records);
        incomplete = incomplete || !outcome.audit.complete;
        for (auto f : outcome.audit.findings) {
            // A path in the leg's copy stands for the same path in the pristine workspace, so
            // that the legs can be compared and the report names what a run would touch.
            const auto rel = stdfs::path{f.path}.lexically_relative(workspace);
            if (!rel.empty() && *rel.begin() != "..") {
                f.path = (stdfs::path{pristine.workspace} / rel).lexically_normal().string();
            }
            ++seen[f.path];
            first.emplace(f.path, f);
        }
        legs.push_back(
            {{"leg", leg}, {"status", outcome.status}, {"audit", audit::to_json(outcome.audit)}});
    }

    audit::AuditResult every;
    every.audited = true;
    every.complete = !incomplete;
    std::vector<std::string> some;
    for (const auto &[path, n] : seen) {
        if (n == static_cast<std::size_t>(options.legs)) {
            every.findings.push_back(first.at(path));
        } else {
            some.push_back(path);
        }
    }
    if (!every.findings.empty()) {
        console::err() << "tea-evaluate: preflight: every leg opened " << every.findings.size()
                       << " path" << (every.findings.size() == 1 ? "" : "s")
                       << " outside the grants; every trial will too (declare what the target "
                          "legitimately reads with --system-path):\n";
        for (const auto &f : every.findings) {
            console::err() << "  " << printable(f.path) << "  (" << printable(f.reason) << ")\n";
        }
    }
    if (!some.empty()) {
        console::err() << "tea-evaluate: preflight: opened by some legs only:\n";
        for (const auto &p : some) {
            console::err() << "  " << printable(p) << '\n';
        }
    }
    if (common.json) {
        nlohmann::json paths = nlohmann::json::array();
        for (const auto &f : every.findings) {
            paths.push_back(bytes::to_json(f.path));
        }
        console::out() << nlohmann::json{{"backend", session.backend_name()},
                                         {"legs", std::move(legs)},
                                         {"everyLeg", std::move(paths)},
                                         {"someLegs", bytes::list_to_json(some)},
                                         {"complete", !incomplete}}
                              .dump(-1, ' ', console::on_terminal(stdout))
                       << '\n';
    }
    if (incomplete) {
        spdlog::error("preflight: the audit of a leg is incomplete, so it proves nothing");
    }
    return every.findings.empty() && !incomplete ? 0 : static_cast<int>(ExitCode::invalid);
}

}  // namespace tea::cli
