// score: decides a run's verdict from its records alone, and refuses to call anything a pass
// that the records cannot prove: a missing or torn record, a manifest that does not match
// run.json, a path a target reached outside its grants, a trial the audit saw only in part.
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tea/json_bytes.hpp>

#include "cli/commands.hpp"
#include "cli/report.hpp"
#include "cli/score_decision.hpp"
#include "evaluation/leak_detectors.hpp"
#include "evaluation/run_records.hpp"
#include "files/beneath.hpp"
#include "util/console.hpp"
#include "util/error.hpp"

namespace tea::cli {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

constexpr std::size_t kReasonsShown = 50;
constexpr std::uintmax_t kRecordCap = std::uintmax_t{256} << 20U;
// The records nest under ten levels (a tool server's and a service's messages are kept as strings).
constexpr int kRecordDepth = 512;

}  // namespace

// A record as JSON, or a null with *why set: absent, too large, torn.
json read_record(const stdfs::path &path, std::string *why) {
    std::error_code ec;
    const auto status = stdfs::symlink_status(path, ec);
    if (!stdfs::is_regular_file(status)) {
        *why = path.filename().string() + " is missing";
        return nullptr;
    }
    if (stdfs::file_size(path, ec) > kRecordCap) {
        *why = path.filename().string() + " is larger than any record the runtime writes";
        return nullptr;
    }
    std::ifstream in{path, std::ios::binary};
    // A record nested deeper than any the runtime writes is refused before it is kept: copying or
    // printing one nested a hundred thousand deep would overflow the stack of score and report.
    bool too_deep = false;
    const json::parser_callback_t depth_bound = [&too_deep](int depth, json::parse_event_t,
                                                            json &) {
        if (depth > kRecordDepth) too_deep = true;
        return !too_deep;
    };
    auto doc = json::parse(in, depth_bound, false);
    if (too_deep) {
        *why = path.filename().string() + " is nested deeper than any record the runtime writes";
        return nullptr;
    }
    if (doc.is_discarded() || !doc.is_object()) {
        *why = path.filename().string() + " is not a JSON object (a torn or altered record)";
        return nullptr;
    }
    return doc;
}

namespace {

std::set<std::string> string_set(const json &list) {
    std::set<std::string> out;
    if (!list.is_array()) return out;
    for (const auto &item : list) {
        if (item.is_string()) {
            out.insert(item.get<std::string>());
        } else if (item.is_object() && item.contains("path") && item["path"].is_string()) {
            out.insert(item["path"].get<std::string>());
        } else {
            out.insert(item.dump());  // a byte string: compared by its JSON form
        }
    }
    return out;
}

// Whether the record names a file of the run (relative, inside it) and that file exists.
bool record_file(const stdfs::path &base, const json &name) {
    if (!name.is_string()) return false;
    const auto rel = name.get<std::string>();
    std::error_code ec;
    return files::plain_relative(rel) &&
           stdfs::is_regular_file(stdfs::symlink_status(base / rel, ec));
}

void check_trials(const stdfs::path &run_dir, const json &run, bool opt_out, Decision &d) {
    const auto &trials = run["trials"];
    if (!run.contains("trialCount") || !run["trialCount"].is_number_integer() ||
        run["trialCount"].get<std::int64_t>() != static_cast<std::int64_t>(trials.size())) {
        d.invalid.emplace_back("run.json records " + std::to_string(trials.size()) +
                               " trials where the run planned " +
                               (run.contains("trialCount") ? run["trialCount"].dump() : "?"));
    }
    for (const auto &t : trials) {
        if (!t.is_object() || !t.contains("index") || !t["index"].is_number_integer()) {
            d.invalid.emplace_back("run.json holds a trial without an index");
            continue;
        }
        const auto index = t["index"].get<int>();
        const auto name = "trial " + std::to_string(index);
        const auto dir = run_dir / "trials" / std::to_string(index);
        const std::string channel = t.value("observedMountsChannel", "");
        if (channel == "lossy") {
            d.invalid.push_back(name + " is lossy: its audit may have missed accesses");
        } else if (channel == "unaudited" && !opt_out) {
            d.invalid.push_back(name + " was not audited under a confined run");
        } else if (channel != "complete" && channel != "unaudited") {
            d.invalid.push_back(name + " has no observedMountsChannel");
        }
        if (!t.contains("calls") || !t["calls"].is_array()) {
            d.invalid.push_back(name + " has no call records");
            continue;
        }
        for (const auto &c : t["calls"]) {
            std::string call = name;
            call += ", call ";
            call += c.is_object() ? c.value("probe", "?") : "?";
            call += ": ";
            // A tool server's stdout is its conversation, kept as the record's exchanges: only a
            // record that holds them may name no stdout file.
            const bool conversation = c.is_object() && c.value("stdout", json{}).is_null() &&
                                      c.contains("exchanges") && c["exchanges"].is_array();
            if (!c.is_object() || (!conversation && !record_file(dir, c.value("stdout", json{}))) ||
                !record_file(dir, c.value("stderr", json{}))) {
                d.invalid.push_back(call + "its output records are missing");
                continue;
            }
            std::string why;
            const auto rec_name = c[conversation ? "stderr" : "stdout"].get<std::string>();
            const std::string_view suffix = conversation ? ".stderr" : ".stdout";
            if (!rec_name.ends_with(suffix)) {
                d.invalid.push_back(call + "its record names no " + std::string{suffix} + " file");
                continue;
            }
            const auto json_name = rec_name.substr(0, rec_name.size() - suffix.size()) + ".json";
            const auto rec = read_record(dir / json_name, &why);
            if (rec.is_null()) {
                d.invalid.push_back(call + why);
            } else if (rec != c) {
                d.invalid.push_back(call + "its record does not match run.json");
            }
            if (c.value("infrastructureError", false)) {
                d.invalid.push_back(call + "an infrastructure error (status " +
                                    std::to_string(c.value("status", -1)) + "), no verdict");
            }
        }
        std::string why;
        const auto verdict_file = read_record(dir / "verdict.json", &why);
        const auto &verdict = t.contains("verdict") ? t["verdict"] : json{};
        if (verdict_file.is_null()) {
            d.invalid.push_back(name + ": ");
            d.invalid.back() += why;
            continue;
        }
        if (verdict_file != verdict) {
            d.invalid.push_back(name + ": verdict.json does not match run.json");
            continue;
        }
        const std::string v = verdict.value("verdict", "");
        if (v == "fail") {
            d.any_fail = true;
            if (verdict.contains("reasons") && verdict["reasons"].is_array()) {
                for (const auto &r : verdict["reasons"]) {
                    if (r.is_string()) d.fail.push_back(name + ": " + r.get<std::string>());
                }
            }
            if (d.fail.empty() || d.fail.back().rfind(name, 0) != 0) {
                d.fail.push_back(name + ": the evaluator failed it");
            }
        } else if (v != "pass") {
            std::string detail;
            if (verdict.contains("reasons") && verdict["reasons"].is_array() &&
                !verdict["reasons"].empty() && verdict["reasons"][0].is_string()) {
                detail = ": " + verdict["reasons"][0].get<std::string>();
            }
            d.invalid.push_back(name + ": the evaluator gave no verdict");
            d.invalid.back() += detail;
        }
    }
}

}  // namespace

Decision decide(const stdfs::path &run_dir, json *run_out, json *manifest_out) {
    Decision d;
    // Read first, so a caller that shows the manifest gets it whatever run.json holds.
    std::string manifest_why;
    const auto manifest = read_record(run_dir / "manifest.json", &manifest_why);
    if (manifest_out != nullptr) *manifest_out = manifest;
    std::string why;
    auto run = read_record(run_dir / "run.json", &why);
    if (run.is_null()) {
        d.invalid.push_back(why);
        return d;
    }
    *run_out = run;
    if (run.value("status", "") != "complete") {
        d.invalid.push_back("the run did not complete (status " + run.value("status", "?") +
                            (run.contains("interruptedBy")
                                 ? ", interrupted by signal " + run["interruptedBy"].dump()
                                 : std::string{}) +
                            ")");
    }
    if (!run.contains("trials") || !run["trials"].is_array() || !run.contains("confinement") ||
        !run["confinement"].is_string() || !run.contains("runId") || !run["runId"].is_string()) {
        d.invalid.emplace_back("run.json lacks runId, confinement or trials");
        return d;
    }
    const bool opt_out = run["confinement"] == "opt-out";
    if (opt_out) {
        // An evaluation that declares confinement, run under --backend opt-out, would otherwise
        // score an unconfined, unaudited run as a pass.
        const auto declared = run.value("declaredConfinement", json{});
        if (!declared.is_boolean()) {
            d.invalid.emplace_back(
                "run.json does not say whether the evaluation declares confinement "
                "(declaredConfinement), and the run opted out of it");
        } else if (declared.get<bool>()) {
            d.invalid.push_back(
                "the evaluation declares confinement, and the run opted out of it "
                "(backend " +
                run.value("backend", std::string{"?"}) +
                "): its targets were neither confined nor audited");
        }
    }
    std::set<std::string> trial_observed;
    for (const auto &t : run["trials"]) {
        if (t.is_object() && t.contains("observedMounts")) {
            const auto s = string_set(t["observedMounts"]);
            trial_observed.insert(s.begin(), s.end());
        }
    }
    if (manifest.is_null()) {
        d.invalid.push_back(manifest_why);
    } else {
        const auto manifest_observed = string_set(manifest.value("observedMounts", json{}));
        if (manifest.value("runId", "") != run["runId"] ||
            manifest.value("confinement", "") != run["confinement"] ||
            manifest.value("trials", std::size_t{0}) != run["trials"].size() ||
            manifest_observed != trial_observed) {
            d.invalid.emplace_back("manifest.json does not match run.json");
        }
        std::vector<std::string> withheld;  // the forbidden inputs' paths
        if (manifest.contains("forbiddenInputs") && manifest["forbiddenInputs"].is_array()) {
            for (const auto &f : manifest["forbiddenInputs"]) {
                if (f.is_object() && f.contains("path") && f["path"].is_string()) {
                    withheld.push_back(f["path"].get<std::string>());
                }
            }
        }
        std::vector<std::string> paths(manifest_observed.begin(), manifest_observed.end());
        evaluation::withheld_first(paths, withheld);
        for (const auto &path : paths) {
            d.invalid.push_back("mount outside allowlist: " + path);
        }
    }
    check_trials(run_dir, run, opt_out, d);
    // A trial whose task ended without its outcome has no verdict: the run cannot pass.
    if (run.contains("failedTrialTasks") && run["failedTrialTasks"].is_array()) {
        for (const auto &f : run["failedTrialTasks"]) {
            d.invalid.push_back("trial " +
                                (f.is_object() ? f.value("trialIndex", json{}).dump() : "?") +
                                ": " + (f.is_object() ? f.value("reason", "its task failed") : "?") +
                                " (an infrastructure error, no verdict)");
        }
    }
    // A copy of the grading material in what a target wrote, or a host tree it changed, is a
    // leak the audit may not have seen (an opted-out run has no audit at all).
    for (auto &finding : evaluation::leak_findings(run)) d.invalid.push_back(std::move(finding));
    return d;
}

namespace {

// The runs folder score's argument means when it names no run itself: an evaluation folder's
// runs/, or a runs folder. nullopt for a run's own directory, and for anything else, which is
// scored as a run (and found Invalid) as before.
std::optional<stdfs::path> runs_folder(const stdfs::path &dir) {
    std::error_code ec;
    if (evaluation::is_run_id(dir.filename().string()) ||
        stdfs::exists(stdfs::symlink_status(dir / "run.json", ec))) {
        return std::nullopt;
    }
    if (stdfs::exists(stdfs::symlink_status(dir / "evaluation.json", ec))) {
        return dir / "runs";
    }
    if (dir.filename() == "runs" || evaluation::latest_run(dir)) {
        return dir;
    }
    return std::nullopt;
}

}  // namespace

Verdict verdict_of(const stdfs::path &run_dir, json *run_out, json *manifest_out) {
    Decision d;
    try {
        d = decide(run_dir, run_out, manifest_out);
    } catch (const json::exception &e) {
        // A record whose field has the wrong type (a hand-edited run.json) is no evidence: it
        // scores Invalid instead of ending score as an internal error.
        d = Decision{};
        d.invalid.push_back(std::string{"a record holds a field of the wrong type: "} + e.what());
    }
    Verdict v;
    v.verdict = !d.invalid.empty() ? "invalid" : (d.any_fail ? "fail" : "pass");
    v.reasons = v.verdict == "invalid" ? std::move(d.invalid) : std::move(d.fail);
    return v;
}

stdfs::path named_run_dir(const stdfs::path &argument, std::string_view command) {
    const std::string name{command};
    std::error_code ec;
    auto run_dir = stdfs::absolute(argument, ec).lexically_normal();
    if (!run_dir.has_filename()) run_dir = run_dir.parent_path();  // "runs/" names runs
    if (ec || !stdfs::is_directory(run_dir, ec)) {
        throw usage_error(name + ": " + argument.string() + " is not a run directory");
    }
    if (const auto runs = runs_folder(run_dir)) {
        const auto latest = evaluation::latest_run(*runs);
        if (!latest) {
            throw usage_error(name + ": " + printable(runs->string()) +
                              " holds no run; tea-evaluate run EVAL_DIR makes one");
        }
        run_dir = *latest;
        console::err() << "tea-evaluate: " << name << ": the latest run in "
                       << printable(runs->string()) << " is "
                       << printable(run_dir.filename().string()) << '\n';
    }
    return run_dir;
}

int score_command(const CommonOptions &common, const ScoreOptions &options) {
    const auto run_dir = named_run_dir(options.run_dir, "score");
    json run;
    const auto decision = verdict_of(run_dir, &run);
    const std::string &verdict = decision.verdict;
    const std::string confinement =
        run.is_object() && run.contains("confinement") && run["confinement"].is_string()
            ? run["confinement"].get<std::string>()
            : "unknown";
    const bool opt_out = confinement == "opt-out";
    std::string summary = "score " +
                          (run.is_object() ? run.value("runId", std::string{"?"}) : "?") + ": " +
                          (verdict == "invalid" ? "INVALID"
                           : verdict == "fail"  ? "FAIL"
                                                : "PASS");
    if (opt_out) {
        summary +=
            " (confinement opt-out: the targets' file system was not sandboxed and nothing "
            "was audited)";
    } else {
        summary += " (confinement " + confinement + ")";
    }
    json reasons = json::array();
    for (const auto &r : decision.reasons) {
        reasons.push_back(bytes::to_json(r));
    }
    const json score{{"schemaVersion", 1},
                     {"runId", run.is_object() ? run.value("runId", json{}) : json{}},
                     {"verdict", verdict},
                     {"reasons", reasons},
                     {"confinement", confinement},
                     {"summary", summary}};
    files::write_atomically(run_dir / "score.json", score.dump(2) + "\n");
    console::err() << "tea-evaluate: " << summary << '\n';
    const auto &listed = decision.reasons;
    for (std::size_t i = 0; i < listed.size(); ++i) {
        if (i == kReasonsShown) {
            // score.json keeps every reason; the terminal gets the first ones.
            console::err() << "  ... and " << listed.size() - i
                           << " more (score.json lists every one)\n";
            break;
        }
        console::err() << "  " << printable(listed[i]) << '\n';
    }
    if (common.json) {
        console::out() << score.dump(-1, ' ', console::on_terminal(stdout)) << '\n';
    }
    if (verdict == "invalid") return static_cast<int>(ExitCode::invalid);
    return verdict == "fail" ? static_cast<int>(ExitCode::fail) : 0;
}

}  // namespace tea::cli
