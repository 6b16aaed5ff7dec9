#include "evaluation/trials.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <tea/json_bytes.hpp>

#include "evaluation/brief_relay.hpp"
#include "evaluation/budgets.hpp"
#include "evaluation/evaluation_agent.hpp"
#include "evaluation/historical_probes.hpp"
#include "evaluation/http_call.hpp"
#include "evaluation/leak_detectors.hpp"
#include "evaluation/login_asks.hpp"
#include "evaluation/program_file.hpp"
#include "evaluation/rubric_judge.hpp"
#include "evaluation/sealed_brief_agent.hpp"
#include "evaluation/skill_target.hpp"
#include "evaluation/target_git.hpp"
#include "evaluation/tool_server_call.hpp"
#include "exec/environment.hpp"
#include "files/beneath.hpp"
#include "files/skill_folder.hpp"
#include "git/private_repository.hpp"
#include "util/error.hpp"
#include "util/signals.hpp"

namespace tea::evaluation {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

constexpr std::uint64_t kArtifactCap = std::uint64_t{16} << 20U;  // per artifact
constexpr std::uint64_t kVerdictCap = std::uint64_t{1} << 20U;    // the evaluator's answer

std::tm utc_tm() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    return tm;
}

}  // namespace

std::string utc_now() {
    const auto tm = utc_tm();
    char buf[32];
    (void)std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

namespace {

double ms(std::chrono::nanoseconds d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

// The target's environment: the documented allowlist of the host's, plus what the entry's
// environmentKeys names. The runtime's own variables (HOME, XDG_*, TMPDIR...) are set by the
// backend afterwards and replace any of these.
std::vector<std::string> target_environment(const Entry &entry) {
    const auto host = exec::current_environment();
    auto env = exec::clean_environment(host);
    for (const auto &key : entry.environment_keys) {
        if (std::string value; exec::find_variable(host, key, &value) != nullptr) {
            exec::set_variable(env, key, value);
        }
    }
    return env;
}

bool infrastructure_code(const Entry &entry, int code) {
    return std::find(entry.infrastructure_exit_codes.begin(), entry.infrastructure_exit_codes.end(),
                     code) != entry.infrastructure_exit_codes.end();
}

std::string two_digits(std::size_t n) {
    return n < 10 ? "0" + std::to_string(n) : std::to_string(n);
}

// The evaluator's answer: {"verdict": "pass"|"fail", "reasons": [string...]}. Anything else is an
// error of the evaluator, never a verdict.
json read_verdict(const stdfs::path &stdout_file, const exec::CallResult &r, std::string *error) {
    if (!r.started) {
        *error = "the evaluator did not start: " + r.start_error;
        return nullptr;
    }
    if (r.timed_out) {
        *error = "the evaluator exceeded its maxElapsedMs";
        return nullptr;
    }
    if (r.setup_marked && !r.setup_reached) {
        // The grader's view failed to set up: its status is the mechanism's, not the evaluator's.
        *error = "the evaluator never started: the grader's confinement ended first (status " +
                 std::to_string(r.status()) + "; its message is in evaluator.stderr)";
        return nullptr;
    }
    if (r.status() != 0) {
        *error = "the evaluator exited with status " + std::to_string(r.status());
        return nullptr;
    }
    if (r.out.truncated) {
        *error = "the evaluator printed " + std::to_string(r.out.total_bytes) +
                 " bytes on stdout, more than the " + std::to_string(kVerdictCap) +
                 " bytes (1 MiB) an answer may hold; evaluator.stdout keeps the first 1 MiB";
        return nullptr;
    }
    std::ifstream in{stdout_file, std::ios::binary};
    std::string text;
    text.resize(kVerdictCap + 1);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kVerdictCap) {
        *error = "the evaluator's answer is larger than 1 MiB";
        return nullptr;
    }
    const auto doc = json::parse(text, nullptr, false);
    if (!doc.is_object() || !doc.contains("verdict") || !doc["verdict"].is_string() ||
        (doc["verdict"] != "pass" && doc["verdict"] != "fail")) {
        *error = "the evaluator's stdout is not {\"verdict\": \"pass\"|\"fail\", ...}";
        return nullptr;
    }
    json reasons = json::array();
    if (doc.contains("reasons")) {
        if (!doc["reasons"].is_array()) {
            *error = "the evaluator's \"reasons\" is not an array of strings";
            return nullptr;
        }
        for (const auto &item : doc["reasons"]) {
            if (!item.is_string()) {
                *error = "the evaluator's \"reasons\" is not an array of strings";
                return nullptr;
            }
            reasons.push_back(item.get<std::string>().substr(0, 2000));
        }
    }
    return json{{"verdict", doc["verdict"]}, {"reasons", reasons}};
}

// Artifacts of every entry the trial called, copied out of the workspace it left behind.
json collect_artifacts(const RunState &state, const std::set<std::string> &entries,
                       const stdfs::path &workspace, const stdfs::path &trial_dir) {
    json out = json::object();
    for (const auto &id : entries) {
        const auto *entry = state.ev.entry(id);
        if (entry == nullptr || entry->artifacts.empty()) continue;
        const auto dir = trial_dir / "artifacts" / id;
        stdfs::create_directories(dir);
        json mine = json::object();
        for (const auto &[name, rel] : entry->artifacts) {
            const auto copy = files::copy_out_beneath(workspace, rel, dir / name, kArtifactCap);
            json item{{"path", bytes::to_json(rel)}, {"status", files::to_string(copy.status)}};
            if (copy.status == files::CopyResult::Status::copied ||
                copy.status == files::CopyResult::Status::truncated) {
                item["file"] = (stdfs::path{"artifacts"} / id / name).string();
                item["bytes"] = copy.bytes;
                state.logins.redact_file(dir / name,
                                         copy.status == files::CopyResult::Status::truncated);
            } else {
                std::error_code ec;
                stdfs::remove(dir / name, ec);
            }
            if (!copy.reason.empty()) item["reason"] = copy.reason;
            mine[name] = std::move(item);
        }
        out[id] = std::move(mine);
    }
    return out;
}

json run_evaluator(RunState &state, int index, const stdfs::path &trial_dir, const json &artifacts,
                   files::RunDirectory &private_dir, TrialProgress &progress) {
    const auto &ev = state.ev;
    if (ev.evaluator.rubric) {
        return run_rubric_judge(state, index, trial_dir, artifacts, private_dir, progress);
    }
    exec::LaunchSpec spec;
    spec.argv.push_back(ev.evaluator_program().string());
    spec.argv.insert(spec.argv.end(), ev.evaluator.command.begin() + 1, ev.evaluator.command.end());
    const auto workdir = private_dir.make_directory("evaluator-");
    spec.workspace = workdir.string();
    spec.cwd = spec.workspace;
    spec.env = exec::current_environment();
    exec::set_variable(spec.env, "TEA_RUN_ID", state.run_id);
    exec::set_variable(spec.env, "TEA_RUN_DIR", state.records.string());
    exec::set_variable(spec.env, "TEA_TRIAL_DIR", trial_dir.string());
    exec::set_variable(spec.env, "TEA_TRIAL_INDEX", std::to_string(index));
    exec::set_variable(spec.env, "TEA_EVALUATION_DIR", ev.folder.string());
    // The grading material and the evidence stay read-only to the grader: an evaluator fooled by
    // what the target left cannot rewrite the records or the evaluation.
    spec.read_only.push_back(ev.folder.string());
    if (state.source.git) {
        // No hook, configuration or ref of the project can be planted by the evaluation layer.
        spec.read_only.push_back(state.source.git_dir.string());
        for (const auto &p : state.source.protected_paths) {
            spec.read_only.push_back(p.string());  // a husky hooks directory, a .git file
        }
    }
    spec.runtime_prefix = state.session.runtime().paths.prefix.string();

    auto run = state.session.run_options({});
    run.timeout = std::chrono::milliseconds{ev.evaluator.max_elapsed_ms};
    run.out.file = trial_dir / "evaluator.stdout";
    // The targets' output cap ([call] output_cap_bytes) would cut a correct verdict short and
    // turn it into an error: the answer has its own limit.
    run.out.cap_bytes = kVerdictCap;
    run.err.file = trial_dir / "evaluator.stderr";
    run.out.redact = run.err.redact = state.logins.matcher();
    run.in = {exec::StdinSpec::Kind::null_device, {}};
    progress.start("trial " + std::to_string(index) + "/" + std::to_string(ev.trials) +
                   ": evaluator");
    std::string confinement;
    const auto r = state.session.grade(std::move(spec), run, &confinement);
    files::remove_tree(workdir);
    if (r.interrupted_by != 0) {
        state.interrupted = r.interrupted_by;
        progress.finish("interrupted");
        return nullptr;
    }
    // The grader read the targets' redacted records; what it printed is redacted as well.
    state.logins.redact_file(run.out.file, r.out.truncated);
    state.logins.redact_file(run.err.file, r.err.truncated);
    std::string error;
    auto verdict = read_verdict(run.out.file, r, &error);
    json record{{"exitCode", r.exit_code},
                {"signal", r.signal},
                {"timedOut", r.timed_out},
                {"elapsedMs", ms(r.elapsed)},
                {"stdout", "evaluator.stdout"},
                {"stderr", "evaluator.stderr"},
                {"view", confinement == "opt-out" ? "unprotected" : "grader"}};
    if (verdict.is_null()) {
        record["verdict"] = "error";
        record["reasons"] = json::array({error});
    } else {
        record["verdict"] = verdict["verdict"];
        record["reasons"] = verdict["reasons"];
    }
    write_record(state, trial_dir / "verdict.json", record);
    progress.finish(record["verdict"].get<std::string>());
    if (verdict.is_null()) {
        progress.evaluator_error(error, run.err.file);
    }
    return record;
}

// What took away the confinement or the audit the evaluation declares: the backend whose plan
// confines nothing (--backend or [confinement] backend), or an observer of "none" (--observer or
// [audit] observer). Empty for a run made as its evaluation declares. Before any call, the
// backend's name stands for the plans' confinement.
json weakened_by(const RunState &state) {
    json out = json::array();
    if (!state.ev.confinement) {
        return out;
    }
    if (state.run.value("confinement", "") == "opt-out") {
        out.push_back({{"setting", "backend"},
                       {"value", state.session.backend_name()},
                       {"effect", "ran the targets unconfined and unaudited"}});
        return out;
    }
    const auto &observer = state.session.runtime().config.observer;
    const bool unaudited_trial = std::any_of(
        state.run["trials"].begin(), state.run["trials"].end(),
        [](const json &t) { return t.value("observedMountsChannel", "") == "unaudited"; });
    if (observer == "none" || unaudited_trial) {
        out.push_back(
            {{"setting", "observer"}, {"value", observer}, {"effect", "audited no call"}});
    }
    return out;
}

}  // namespace

std::vector<std::string> weakened_sentences(const nlohmann::json &weakened) {
    std::vector<std::string> out;
    for (const auto &w : weakened) {
        out.push_back(w.value("setting", "") + " " + w.value("value", "") + " " +
                      w.value("effect", ""));
    }
    return out;
}

std::string new_run_id() {
    // The microseconds make ids sort by start time, runs of the same second included, so that
    // the last name of EVAL_DIR/runs is the latest run (score EVAL_DIR relies on it).
    const auto now = std::chrono::system_clock::now();
    const auto seconds = std::chrono::floor<std::chrono::seconds>(now);
    const std::time_t t = std::chrono::system_clock::to_time_t(seconds);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[48];
    const auto length = std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%S", &tm);
    (void)std::snprintf(
        buf + length, sizeof buf - length, ".%06lldZ",
        static_cast<long long>(
            std::chrono::duration_cast<std::chrono::microseconds>(now - seconds).count()));
    return std::string{buf} + "-" + files::random_token(6);
}

void save_run(RunState &state) {
    write_record(state, state.records / "run.json", state.run);
}

// A trial's workspace: for a project at the root of its repository, a checkout attached to a
// private repository of the evaluated commit's history without the evaluation folder (see
// git/private_repository.hpp), built once and then reused from the runtime's cache; otherwise a
// plain checkout (or copy) with no history. Returns the private repository, or an empty path.
stdfs::path prepare_workspace(const RunState &state, const stdfs::path &workspace,
                              files::RunDirectory &private_dir) {
    return prepare_workspace(state.source, workspace, private_dir);
}

stdfs::path prepare_workspace(const git::WorkspaceSource &source, const stdfs::path &workspace,
                              files::RunDirectory &private_dir) {
    if (!source.git || !source.prefix.empty()) {
        (void)git::materialize(source, workspace);
        return {};
    }
    auto repository = build_target_repository(source, source.excluded, private_dir);
    try {
        git::attach_worktree(workspace, repository);
    } catch (const git::PrivateRepositoryError &e) {
        throw host_error(e.what());
    }
    return repository;
}

// Every probe's call of its entry, in order, in one workspace and home. label names the trial or
// leg in the progress lines; the call records go to trial_dir/calls.
Calls run_calls(RunState &state, int index, const std::string &label, const stdfs::path &trial_dir,
                const stdfs::path &workspace, const stdfs::path &home,
                const stdfs::path &repository, files::RunDirectory &private_dir,
                TrialProgress &progress) {
    const auto &ev = state.ev;
    Calls out;
    stdfs::create_directories(trial_dir / "calls");
    std::size_t n = 0;
    for (const auto &probe : ev.probes) {
        ++n;
        const auto *entry = ev.entry(probe.entry);
        out.entries.insert(entry->interface_id);
        // A historical probe's call has a workspace and git of its own, the revision's; the
        // trial's workspace (and so its artifacts) is the evaluated commit's alone.
        const bool historical = !probe.revision.empty();
        const auto resolved = state.revisions.find(probe.revision);
        if (historical && resolved == state.revisions.end()) {
            // Only check_revisions may say a revision's objects are on disk; a caller that skipped
            // it would otherwise meet a missing object in the middle of a trial.
            throw runtime_failure("probe '" + probe.name + "': revision '" + probe.revision +
                                  "' was not checked before the trials (check_revisions)");
        }
        const auto revision_commit = historical ? resolved->second : std::string{};
        const auto call_workspace =
            historical ? private_dir.make_directory("workspace-") : workspace;
        auto call_repository = repository;
        if (historical) {
            ::chmod(call_workspace.c_str(), 0755);
            call_repository = prepare_workspace(source_at(state.source, revision_commit),
                                                call_workspace, private_dir);
        }
        for (const auto &[rel, content] : probe.files) {
            files::write_beneath(call_workspace, rel, content);
        }
        exec::LaunchSpec spec;
        // A server's command line is its entry's; a command's arguments are its probe's.
        const auto &args = probe.tool_server || probe.http ? entry->args : probe.args;
        if (is_skill_target(*entry)) {
            spec.argv =
                skill_call_argv(state.session.runtime().paths.prefix, call_workspace, *entry, args);
        } else {
            spec.argv.push_back((call_workspace / entry->target).string());
            spec.argv.insert(spec.argv.end(), args.begin(), args.end());
        }
        // Opted out, the target keeps the host's environment as it keeps the host's files.
        spec.env = ev.confinement ? target_environment(*entry) : exec::current_environment();
        // The login's variables and files; its strings are secrets before the target starts.
        state.logins.apply(entry->interface_id, spec, ev.confinement);
        spec.workspace = call_workspace.string();
        spec.cwd = spec.workspace;
        spec.home = home.string();
        spec.withhold.push_back(ev.folder.string());
        if (state.source.git) {
            withhold_git_dirs(spec, state.source);
        }
        spec.system_paths = entry->system_paths;
        if (!call_repository.empty() && ev.confinement) {
            grant_target_repository(spec, call_repository);
        }
        spec.runtime_prefix = state.session.runtime().paths.prefix.string();
        spec.helper_dir = state.session.runtime().paths.helper_dir.string();

        const std::string stem = two_digits(n) + "-" + probe.name;
        auto run = state.session.run_options({});
        run.timeout = std::chrono::milliseconds{entry->max_elapsed_ms};
        run.budget = entry_budget(state.budget, ev.budgets, entry->budgets);
        std::optional<ToolServerCall> tool_server;
        std::optional<HttpCall> http_call;
        std::optional<BriefRelay> relay;
        // A server over stdio talks on its stdout; one over HTTP prints there as a command does.
        const bool stdio_server = probe.tool_server && entry->transport != "http";
        // A command in a conversation answers the relay on its stdout.
        const bool stdio_talk = stdio_server || probe.conversation;
        // The agent of a conversation, a fresh one (its own home and session) for each call.
        std::unique_ptr<SealedBriefAgent> brief_agent;
        if (probe.conversation) {
            stdfs::create_directories(trial_dir / "relay");
            brief_agent = std::make_unique<SealedBriefAgent>(
                state.session, state.logins, private_dir, *probe.conversation, trial_dir / "relay",
                probe.name, std::vector<stdfs::path>{ev.folder});
            relay.emplace(*probe.conversation,
                          [agent = brief_agent.get()](const std::optional<std::string> &reply,
                                                      std::chrono::milliseconds timeout) {
                              return agent->next(reply, timeout);
                          });
            run.conversation = relay->conversation();
        } else if (probe.tool_server) {
            tool_server.emplace(
                *probe.tool_server, *run.timeout,
                stdio_server ? std::nullopt : std::optional<std::string>{entry->endpoint_path});
            run.conversation = tool_server->conversation();
        } else if (probe.http) {
            http_call.emplace(*probe.http, *run.timeout);
            run.conversation = http_call->conversation();
        }
        if (!stdio_talk) {
            run.out.file = trial_dir / "calls" / (stem + ".stdout");
        }
        run.err.file = trial_dir / "calls" / (stem + ".stderr");
        // Streamed with the secrets known as the call starts, and again once it settles.
        run.out.redact = run.err.redact = state.logins.matcher();
        stdfs::path stdin_file;
        if (!probe.stdin_text.empty()) {
            stdin_file = private_dir.make_directory("stdin-") / "stdin";
            files::write_atomically(stdin_file, probe.stdin_text);
            run.in = {exec::StdinSpec::Kind::file, stdin_file};
        } else {
            run.in = {exec::StdinSpec::Kind::null_device, {}};
        }
        call::EgressRequest route;
        route.entry = entry->interface_id;
        route.items = route_items(entry->egress);
        progress.start(label + ": " + probe.name + " (" + entry->executable + ")");
        // The trial's workspace and home are removed after its last call (run_trial), and no
        // call gives them back in between: the next call lends them again, what the runtime
        // wrote in between (the probes' files) included.
        std::vector<stdfs::path> removed_after{call_workspace};
        if (!home.empty()) removed_after.push_back(home);
        auto outcome = state.session.call(std::move(spec), run, route, std::move(removed_after),
                                          http_call     ? http_call->bridge_request()
                                          : tool_server ? tool_server->bridge_request()
                                                        : call::ServiceBridgeRequest{});
        const auto &r = outcome.result;
        if (http_call) {
            http_call->settle(r);
        }
        if (tool_server) {
            tool_server->settle(r);
        }
        // The bridged service that never got its request, when one did not.
        const std::optional<std::string> service_failure = http_call ? http_call->failed_to_start()
                                                           : tool_server
                                                               ? tool_server->failed_to_start()
                                                               : std::nullopt;
        // The call has settled: a token the host's client rotated meanwhile joins the secrets,
        // and what the call printed is redacted with every one of them.
        state.logins.settle(outcome);
        if (!run.out.file.empty()) {
            state.logins.redact_file(run.out.file, r.out.truncated);
        }
        state.logins.redact_file(run.err.file, r.err.truncated);
        state.confinement = outcome.confinement;
        int interrupted = r.interrupted_by;
        if (interrupted == 0 && brief_agent) {
            interrupted = brief_agent->interrupted_by();
        }
        if (interrupted == 0) {
            // A signal the runtime read only after the call's leader ended, when the leader died
            // of that same signal, ended the call: a scheduler that cancels a task signals every
            // process of it, and the target may die of it first. Any other call ran to its own
            // end and counts.
            const int late = Signals::instance().pending();
            if (late != 0 && (r.signal == late || (r.signal == 0 && r.exit_code == 128 + late))) {
                interrupted = late;
            }
        }
        // The connections the route refused are kept even when the call was interrupted: they
        // are what the target tried, and a run cut short in that call must not lose them.
        const auto &egress = outcome.egress_records;
        const bool refused = egress.contains("refusals") && egress["refusals"].is_array() &&
                             !egress["refusals"].empty();
        if (refused) {
            state.egress_refusals.push_back({{"trialIndex", index},
                                             {"entry", entry->interface_id},
                                             {"probe", probe.name},
                                             {"refusals", egress["refusals"]},
                                             {"omitted", egress.value("omitted", 0)}});
        }
        if (interrupted != 0) {
            progress.finish("interrupted");
            out.interrupted = interrupted;
            return out;
        }
        const bool infrastructure =
            !r.started || outcome.target_never_started ||
            (r.signal == 0 && !r.timed_out && infrastructure_code(*entry, r.exit_code)) ||
            (http_call && http_call->infrastructure_error()) ||
            (tool_server && tool_server->infrastructure_error()) ||
            (relay && relay->ended() == RelayEnd::agent_failed);
        out.infrastructure_errors += infrastructure ? 1 : 0;
        json observed_paths = json::array();
        for (const auto &f : outcome.audit.findings) {
            observed_paths.push_back(bytes::to_json(f.path));
            out.observed.insert(f.path);
            out.reasons.emplace(f.path, f.reason);
        }
        if (outcome.audit.audited && !outcome.audit.complete) {
            out.lossy = true;
            out.lossy_reasons.push_back(probe.name + ": " + outcome.audit.reason);
        }
        out.audited_all = out.audited_all && outcome.audit.audited;
        json call{{"probe", probe.name},
                  {"entry", entry->interface_id},
                  {"executable", entry->executable},
                  {"args", bytes::list_to_json(args)},
                  {"started", r.started},
                  {"startError", r.start_error},
                  {"exitCode", r.exit_code},
                  {"signal", r.signal},
                  {"timedOut", r.timed_out},
                  {"elapsedMs", ms(r.elapsed)},
                  {"status", outcome.status},
                  {"infrastructureError", infrastructure},
                  {"targetStarted", r.started && !outcome.target_never_started},
                  {"stdout", stdio_talk ? json(nullptr) : json("calls/" + stem + ".stdout")},
                  {"stderr", "calls/" + stem + ".stderr"},
                  {"stdoutBytes", r.out.total_bytes},
                  {"stderrBytes", r.err.total_bytes},
                  {"stdoutTruncated", r.out.truncated},
                  {"stderrTruncated", r.err.truncated},
                  {"observedMounts", observed_paths},
                  {"identity", call::identity_record(outcome)},
                  {"audit", audit::to_json(outcome.audit)},
                  {"budget", call_budget_record(r.budget, r.limits)},
                  {"budgetHits", budget_hits(r.budget)}};
        if (historical) {
            call["revision"] = {{"name", probe.revision}, {"commit", revision_commit}};
        }
        if (is_skill_target(*entry)) {
            call["skill"] = {{"folder", entry->target},
                             {"transcript", kSkillTranscript},
                             {"runnerExit", r.started && r.signal == 0 && !r.timed_out
                                                ? json(skill_exit_meaning(r.exit_code))
                                                : json(nullptr)}};
        }
        if (tool_server) {
            // What the server said, redacted with the rest of the record (write_record).
            call["endedByRuntime"] = r.ended_by_runtime;
            call.update(tool_server->record());
        }
        if (http_call) {
            call["endedByRuntime"] = r.ended_by_runtime;
            call.update(http_call->record());
        }
        if (relay) {
            // The whole exchange is a trial artifact, redacted as every record is; the call
            // record keeps each turn cut short.
            const auto transcript = "relay/" + probe.name + ".jsonl";
            files::write_atomically(trial_dir / transcript,
                                    state.logins.redact(relay->transcript()));
            call["endedByRuntime"] = r.ended_by_runtime;
            call["relay"] = relay->record(transcript);
            call["relay"]["agent"] = brief_agent->record();
        }
        if (service_failure) {
            state.services_failed.push_back({{"trialIndex", index},
                                             {"entry", entry->interface_id},
                                             {"probe", probe.name},
                                             {"reason", *service_failure},
                                             {"infrastructureError", infrastructure}});
        }
        ++out.made;
        if (!outcome.sockets_left_reachable.empty()) {
            ++out.truncated;
            out.sockets_left_reachable.insert(outcome.sockets_left_reachable.begin(),
                                              outcome.sockets_left_reachable.end());
            call["socketsLeftReachable"] = bytes::list_to_json(outcome.sockets_left_reachable);
        }
        for (auto hit : call["budgetHits"]) {
            hit["probe"] = probe.name;
            hit["entry"] = entry->interface_id;
            out.budget_hits.push_back(std::move(hit));
        }
        if (refused) {
            call["egressRefusals"] = egress["refusals"];
        }
        write_record(state, trial_dir / "calls" / (stem + ".json"), call);
        out.records.push_back(call);
        if (!stdin_file.empty()) files::remove_tree(stdin_file.parent_path());
        if (historical) {
            files::remove_tree(call_workspace);
            if (!call_repository.empty()) files::remove_tree(call_repository);
        }
        std::string outcome_text = infrastructure ? "infrastructure error, status " : "status ";
        outcome_text += std::to_string(outcome.status);
        if (service_failure) {
            outcome_text += ", the service did not start: " + *service_failure;
        }
        if (call.contains("expect")) {
            outcome_text += call["expect"]["met"].get<bool>() ? ", expect met" : ", expect not met";
        }
        if (!outcome.audit.findings.empty()) {
            outcome_text += ", " + std::to_string(outcome.audit.findings.size()) +
                            " path(s) outside the grants";
        }
        if (!outcome.sockets_left_reachable.empty()) {
            outcome_text += ", " + std::to_string(outcome.sockets_left_reachable.size()) +
                            " host socket(s) left reachable";
        }
        progress.finish(outcome_text);
        progress.refusals(outcome.egress_records);
    }

    return out;
}

namespace {

// The machine the trial ran on, as uname(2) names it.
std::string node_name() {
    utsname names{};
    return ::uname(&names) == 0 ? std::string{names.nodename} : std::string{};
}

// The elements of `list` from `from` on, taken out of it.
json take_from(json &list, std::size_t from) {
    json taken = json::array();
    for (std::size_t i = from; i < list.size(); ++i) taken.push_back(std::move(list[i]));
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(from), list.end());
    return taken;
}

}  // namespace

std::optional<json> trial_outcome(RunState &state, int index, files::RunDirectory &private_dir,
                                  TrialProgress &progress) {
    const auto &ev = state.ev;
    const auto trial_dir = state.records / "trials" / std::to_string(index);
    // What the calls add to the run's lists is handed back in the outcome, not left in `state`:
    // merge_trial adds it, whichever process ran the trial.
    const auto refusals_before = state.egress_refusals.size();
    const auto failed_before = state.services_failed.size();
    const auto workspace = private_dir.make_directory("workspace-");
    // Opted out, the targets keep the host's HOME (and the whole environment): a private home
    // would be a directory nothing names.
    const auto home =
        ev.confinement ? private_dir.make_directory("tea-evaluate-target-home-") : stdfs::path{};
    std::optional<files::TrialDisk> disk;
    if (state.disk) {
        disk.emplace(private_dir, *state.disk, state.disk_bytes, workspace, home);
    }
    ::chmod(workspace.c_str(), 0755);
    const auto repository = prepare_workspace(state, workspace, private_dir);
    if (state.mutate) state.mutate(workspace);
    const auto label = "trial " + std::to_string(index) + "/" + std::to_string(ev.trials);
    auto calls = run_calls(state, index, label, trial_dir, workspace, home, repository, private_dir,
                           progress);
    if (calls.interrupted != 0) {
        state.interrupted = calls.interrupted;
        return std::nullopt;
    }
    json outcome{{"schemaVersion", 1},
                 {"runId", state.run_id},
                 {"trialIndex", index},
                 {"observed", json::array()},
                 {"hostSocketTruncation", nullptr}};
    for (const auto &path : calls.observed) {
        const auto reason = calls.reasons.find(path);
        outcome["observed"].push_back(
            {{"path", bytes::to_json(path)},
             {"reason", reason == calls.reasons.end() ? std::string{} : reason->second}});
    }
    json trial{{"index", index}, {"node", node_name()}, {"calls", calls.records}};
    trial["artifacts"] = collect_artifacts(state, calls.entries, workspace, trial_dir);
    // A target that read the grading material and wrote any of it where it may write (its
    // workspace, its home, its output and artifacts, kept in the trial's records) leaves the
    // canary there.
    trial["canaryScan"] = state.detectors->scan_trial(
        {{"workspace", workspace}, {"home", home}, {"trials/" + std::to_string(index), trial_dir}});
    if (disk) {
        trial["diskUsedBytes"] = disk->used_bytes();
        if (disk->full()) {
            // What the target was told is its own (ENOSPC); the record says the budget told it.
            calls.budget_hits.push_back(
                {{"budget", "disk"},
                 {"count", 1},
                 {"detail",
                  "the trial's file system of " + std::to_string(state.disk_bytes) +
                      " bytes filled up (less than 1 MiB left); writes past it answer ENOSPC"}});
        }
        disk->release();
    }
    trial["budgetHits"] = calls.budget_hits;
    files::remove_tree(workspace);
    if (!repository.empty()) files::remove_tree(repository);
    if (!home.empty()) files::remove_tree(home);  // each trial starts with an empty home

    trial["observedMountsChannel"] =
        !calls.audited_all ? "unaudited" : (calls.lossy ? "lossy" : "complete");
    if (calls.lossy) {
        trial["lossyReasons"] = calls.lossy_reasons;
    }
    json observed = json::array();
    for (const auto &p : calls.observed) observed.push_back(bytes::to_json(p));
    trial["observedMounts"] = observed;
    trial["infrastructureErrors"] = calls.infrastructure_errors;
    if (calls.truncated > 0) {
        // The confinement left host sockets open to the target (for lack of room to mask them):
        // not a breach the audit saw, but a protection cut short, so recorded and named only.
        outcome["hostSocketTruncation"] = {
            {"conditionArm", state.condition_arm},
            {"trialIndex", index},
            {"calls", calls.made},
            {"truncatedCalls", calls.truncated},
            {"socketsLeftReachable",
             bytes::list_to_json(std::vector<std::string>(calls.sockets_left_reachable.begin(),
                                                          calls.sockets_left_reachable.end()))}};
    }
    auto verdict =
        run_evaluator(state, index, trial_dir, trial["artifacts"], private_dir, progress);
    // Interrupted in the evaluator, the trial has no verdict and is not one of the run's trials,
    // but what its calls did still counts in the run's summary and manifest.
    outcome["interrupted"] = state.interrupted != 0;
    trial["verdict"] = verdict;
    outcome["trial"] = std::move(trial);
    outcome["egressRefusals"] = take_from(state.egress_refusals, refusals_before);
    outcome["servicesFailed"] = take_from(state.services_failed, failed_before);
    outcome["confinement"] = state.confinement;
    const auto observer = state.session.observer_name();
    outcome["observer"] = observer.empty() ? json(nullptr) : json(observer);
    return outcome;
}

void merge_trial(RunState &state, const json &outcome) {
    const auto &trial = outcome.at("trial");
    const int index = trial.at("index").get<int>();
    for (const auto &o : outcome.at("observed")) {
        const auto path = bytes::from_json(o.at("path"), "observed[].path");
        state.observed[path].insert(index);
        state.observed_reason.emplace(path, o.at("reason").get<std::string>());
    }
    if (!trial.at("budgetHits").empty()) state.budget_trials.insert(index);
    if (trial.contains("lossyReasons")) state.lossy.push_back(index);
    if (!outcome.at("hostSocketTruncation").is_null()) {
        state.run["hostSocketTruncation"].push_back(outcome["hostSocketTruncation"]);
    }
    for (const auto &r : outcome.at("egressRefusals")) state.egress_refusals.push_back(r);
    for (const auto &f : outcome.at("servicesFailed")) state.services_failed.push_back(f);
    if (const auto &c = outcome.at("confinement"); c.is_string() && !c.get<std::string>().empty()) {
        state.confinement = c.get<std::string>();
    }
    if (const auto &o = outcome.at("observer"); o.is_string()) state.trials_observer = o;
    if (!outcome.at("interrupted").get<bool>()) state.run["trials"].push_back(trial);
}

bool run_trial(RunState &state, int index, files::RunDirectory &private_dir,
               TrialProgress &progress) {
    const auto outcome = trial_outcome(state, index, private_dir, progress);
    if (!outcome) return false;
    merge_trial(state, *outcome);
    return state.interrupted == 0;
}

// Where the run's trials keep their workspace and home: a file system of the budget's size when
// the configuration asks for one and the runtime may mount it (root), in a mount namespace of
// the runtime's own. Returns why there is none, when there is none.
std::string choose_disk(RunState &state, const config::BudgetSettings &settings) {
    const auto &asked = state.ev.budgets.disk_bytes;
    state.disk_bytes = asked.value_or(settings.disk_bytes);
    if (settings.disk == "none") {
        if (asked) {
            // Fail closed: the evaluation's bound would silently not hold.
            throw usage_error(
                "evaluation.json sets budgets.diskBytes, and the configuration's "
                "budgets.disk is \"none\"; set it to \"tmpfs\" or \"image\"");
        }
        return "budgets.disk = \"none\"";
    }
    if (::geteuid() != 0) {
        if (asked) {
            throw host_error(
                "evaluation.json sets budgets.diskBytes, and an unprivileged run cannot mount "
                "the trials' file system of bounded size; run as root, or remove it");
        }
        return "an unprivileged run cannot mount a file system; the trials' workspaces and homes "
               "are on the private root's disk";
    }
    files::enter_private_mount_namespace();
    state.disk = settings.disk == "image" ? files::DiskKind::image : files::DiskKind::tmpfs;
    return {};
}

git::WorkspaceSource open_source(const Evaluation &ev) {
    const auto excluded = ev.folder.lexically_relative(ev.project_root).string();
    try {
        return git::open_workspace_source(ev.project_root, {excluded});
    } catch (const git::WorkspaceSourceError &e) {
        throw usage_error(e.what());
    }
}

call::Logins grant_logins(const Evaluation &ev, const call::CallSession &session) {
    const auto uses = login_uses(ev);
    if (uses.empty()) {
        return {};
    }
    std::vector<call::LoginAsk> asks;
    for (const auto &use : uses) asks.push_back(use.ask);
    const auto &runtime = session.runtime();
    auto logins = call::Logins::grant(runtime.registry, runtime.config, asks, ev.confinement);
    // Only a target's grant is shown by the backend: an evaluation-layer agent's files are
    // written into that agent's own home (evaluation_agent.hpp), whatever the backend.
    const auto &granted = logins.granted();
    bool files = false;
    for (std::size_t i = 0; i < granted.size(); ++i) {
        files = files || (uses[i].target && !granted[i].grant.files.empty());
    }
    if (ev.confinement && files && !session.backend_capabilities().login_files) {
        // Said before any target starts: each call would otherwise stop at its first call.
        throw host_error(
            "a login of the evaluation links files into the private home, and the "
            "backend '" +
            session.backend_name() +
            "' cannot show them (plugin ABI 1.8); upgrade it, or use the login's "
            "token");
    }
    return logins;
}

void write_record(const RunState &state, const stdfs::path &path, const json &doc) {
    // A marker replacing a secret that began inside a character could leave a string that is not
    // UTF-8: such bytes become U+FFFD rather than end the run without its records.
    const auto text = [](const json &record) {
        return record.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    };
    files::write_atomically(
        path, state.logins.empty() ? text(doc) : text(state.logins.redact_record(doc)));
}

void check_targets(const Evaluation &ev, const git::WorkspaceSource &source,
                   files::RunDirectory &private_dir) {
    const auto check_dir = private_dir.make_directory("check-");
    try {
        (void)git::materialize(source, check_dir);
    } catch (const git::MissingObjectsError &e) {
        // A partial clone's promisor remote is never asked: a confined run reaches no network,
        // and a fetch on the target's behalf would let it pull whatever the remote serves.
        throw host_error(std::string{e.what()} +
                         "; a confined run fetches nothing, so no workspace can be made of "
                         "commit " +
                         e.commit() +
                         ". Bring its objects into your clone once (a git command that reads "
                         "every file of the commit fetches them: git archive " +
                         e.commit() + " >/dev/null) and run again");
    }
    const std::string where = source.git ? "commit " + source.commit : "the project";
    for (const auto &entry : ev.registry) {
        std::error_code ec;
        const auto target = check_dir / entry.target;
        if (is_skill_target(entry)) {
            // The workspace is this checkout: the folder `check` read in the work tree may not be
            // the one committed.
            if (const auto why = files::why_not_skill_folder(target)) {
                files::remove_tree(check_dir);
                throw usage_error("entry '" + entry.interface_id +
                                  "' field 'target': the skill "
                                  "folder '" +
                                  entry.target + "' in " + where + " " + *why +
                                  (source.git ? " (commit it first)" : ""));
            }
            continue;
        }
        if (!stdfs::is_regular_file(stdfs::symlink_status(target, ec))) {
            files::remove_tree(check_dir);
            throw usage_error("entry '" + entry.interface_id + "': target '" + entry.target +
                              "' is not a file in " + where +
                              (source.git ? " (commit it first)" : ""));
        }
        // The workspace is this checkout: a mode or a first line that only the work tree has
        // fixed (`check` reads the work tree) would still fail every call with 126.
        if (const auto why = why_not_executable(target)) {
            files::remove_tree(check_dir);
            throw usage_error("entry '" + entry.interface_id + "' field 'target': '" +
                              entry.target + "' in " + where + " " + *why +
                              (source.git ? ", and commit it" : ""));
        }
    }
    files::remove_tree(check_dir);
}

void begin_run(RunState &state, files::RunDirectory &private_dir) {
    const auto &ev = state.ev;
    auto &session = state.session;
    const auto &source = state.source;
    const auto runs = ev.folder / "runs";
    // Named before anything is written, so that a guarded path that does not exist stops the run
    // with nothing of it made.
    auto guarded =
        guarded_trees(ev.folder, source.git ? source.git_dir : stdfs::path{},
                      session.runtime().config.host_unchanged, {runs, session.private_root()});
    if (::mkdir(runs.c_str(), 0755) != 0 && errno != EEXIST) {
        throw runtime_failure("cannot make " + runs.string() + ": " + errno_text(errno));
    }
    if (stdfs::is_symlink(runs)) {
        // Records written through a link would land wherever the link points.
        throw usage_error(runs.string() +
                          " is a symbolic link; the records must stay in the "
                          "evaluation folder");
    }
    const auto &settings = session.runtime().config.budgets;
    state.budget = configured_budget(settings);
    state.disk_reason = choose_disk(state, settings);
    check_targets(ev, source, private_dir);
    state.revisions = check_revisions(ev, source, private_dir);
    // Before any target starts, and after the runtime's own writes to the guarded trees (an
    // opted-out run's fetch of a historical probe's revision into the project's git directory):
    // the trees no target may change, as they are now.
    state.detectors = std::make_shared<RunLeakDetectors>(std::move(guarded));
    state.records = runs / state.run_id;
    if (::mkdir(state.records.c_str(), 0755) != 0) {
        throw runtime_failure("cannot make " + state.records.string() + ": " + errno_text(errno));
    }
    if (ev.canaries) state.detectors->plant(state.records);

    state.run =
        json{{"schemaVersion", 1},
             {"runId", state.run_id},
             {"status", "running"},
             {"startedAt", utc_now()},
             {"finishedAt", nullptr},
             {"evaluation", ev.folder.string()},
             {"project", ev.project_root.string()},
             {"source",
              source.git ? json{{"kind", "git"},
                                {"commit", source.commit},
                                {"gitDir", source.git_dir.string()},
                                {"history", source.prefix.empty() ? "private repository" : "none"}}
                         : json{{"kind", "copy"}}},
             {"confinement", ev.confinement ? session.backend_name() : "opt-out"},
             {"declaredConfinement", ev.confinement},
             {"weakened", json::array()},
             {"backend", session.backend_name()},
             {"observer", nullptr},
             {"trialCount", ev.trials},
             {"trials", json::array()},
             {"egress", json::array()},
             {"egressRefusals", json::array()},
             {"servicesFailed", json::array()},
             {"hostSocketTruncation", json::array()},
             {"logins", state.logins.records(ev.confinement)},
             {"budgets", run_budgets_record(entry_budget(state.budget, ev.budgets, {}), ev,
                                            state.disk ? settings.disk : "none", state.disk_bytes,
                                            state.disk_reason)},
             {"canaries", state.detectors->canaries_record()},
             {"hostUnchanged", nullptr},
             {"manifest", "manifest.json"},
             {"conditionArm", state.condition_arm},
             {"executor", state.executor},
             {"failedTrialTasks", json::array()},
             {"retriedTrialTasks", json::array()}};
    if (!state.mutation.empty()) state.run["mutation"] = state.mutation;
    for (const auto &entry : ev.registry) {
        if (!entry.egress.empty()) {
            state.run["egress"].push_back(
                {{"entry", entry.interface_id},
                 {"items", json::parse(egress::items_to_json(route_items(entry.egress)))}});
        }
    }
    state.run["weakened"] = weakened_by(state);
    save_run(state);
}

void run_trials(RunState &state, files::RunDirectory &private_dir, TrialProgress &progress) {
    const auto &ev = state.ev;
    recording_failure(state, [&] {
        for (int i = 1; i <= ev.trials && state.interrupted == 0; ++i) {
            if (const int sig = Signals::instance().pending(); sig != 0) {
                state.interrupted = sig;
                break;
            }
            if (!run_trial(state, i, private_dir, progress)) break;
            save_run(state);
        }
    });
}

void recording_failure(RunState &state, const std::function<void()> &trials) {
    try {
        trials();
    } catch (const std::exception &e) {
        // The record says the run failed and why; score refuses it. The private directories go
        // with private_dir as the error leaves.
        state.run["status"] = "failed";
        state.run["error"] = e.what();
        state.run["finishedAt"] = utc_now();
        try {
            save_run(state);
        } catch (const std::exception &) {
            spdlog::error("cannot record the failure in {}", state.records.string());
        }
        throw;
    }
}

RunSummary finish_run(RunState &state) {
    state.run["finishedAt"] = utc_now();
    if (!state.confinement.empty()) state.run["confinement"] = state.confinement;
    // The observer of the trials' calls, whichever process made them.
    const auto observer = state.session.observer_name();
    state.run["observer"] = !observer.empty()                ? json(observer)
                            : !state.trials_observer.empty() ? json(state.trials_observer)
                                                             : json(nullptr);
    state.run["egressRefusals"] = state.egress_refusals;
    state.run["servicesFailed"] = state.services_failed;
    state.run["weakened"] = weakened_by(state);
    state.run["hostUnchanged"] = state.detectors->finish();

    RunSummary summary;
    summary.run_id = state.run_id;
    summary.opt_out = state.run["confinement"] == "opt-out";
    summary.trials = state.ev.trials;
    summary.lossy = state.lossy;
    for (const auto &[path, trials] : state.observed) summary.observed.push_back(path);
    for (const auto &r : state.egress_refusals)
        summary.refusal_trials.insert(r["trialIndex"].get<int>());
    for (const auto &t : state.run["hostSocketTruncation"])
        summary.socket_truncation_trials.insert(t["trialIndex"].get<int>());
    summary.budget_trials = state.budget_trials;
    for (const auto &f : state.services_failed) {
        const auto named = "entry '" + f["entry"].get<std::string>() + "' in trial " +
                           std::to_string(f["trialIndex"].get<int>());
        if (std::find(summary.failed_services.begin(), summary.failed_services.end(), named) ==
            summary.failed_services.end()) {
            summary.failed_services.push_back(named);
        }
    }
    summary.weakened = weakened_sentences(state.run["weakened"]);
    summary.leaks = leak_findings(state.run);
    for (const auto &f : state.run["failedTrialTasks"]) {
        summary.failed_tasks.push_back(f["trialIndex"].get<int>());
    }
    summary.interrupted = state.interrupted;

    if (state.interrupted != 0) {
        state.run["status"] = "interrupted";
        state.run["interruptedBy"] = state.interrupted;
    } else {
        state.run["status"] = "complete";
    }
    // The manifest first, then run.json: a run.json that says complete always has its manifest.
    auto manifest = isolation_manifest(state.run, state.ev, state.observed, state.observed_reason);
    manifest["conditionArm"] = state.condition_arm;
    if (!state.mutation.empty()) manifest["mutation"] = state.mutation;
    write_record(state, state.records / "manifest.json", manifest);
    state.run["summary"] = summary_line(summary);
    save_run(state);
    return summary;
}

}  // namespace tea::evaluation
