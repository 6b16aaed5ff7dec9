#include "evaluation/run_records.hpp"

#include <algorithm>
#include <tea/json_bytes.hpp>

#include "audit/judge.hpp"
#include "files/private_dirs.hpp"
#include "util/paths.hpp"

namespace tea::evaluation {
namespace {

using nlohmann::json;

std::string join(const std::vector<int> &items) {
    std::string out;
    for (const int i : items) {
        out += (out.empty() ? "" : ", ") + std::to_string(i);
    }
    return out;
}

// "trial 3" or "trials 1, 2".
std::string trials_named(const std::vector<int> &trials) {
    return std::string{trials.size() == 1 ? "trial " : "trials "} + join(trials);
}

std::string trials_named(const std::set<int> &trials) {
    return trials_named(std::vector<int>{trials.begin(), trials.end()});
}

}  // namespace

void withheld_first(std::vector<std::string> &paths, const std::vector<std::string> &withheld) {
    std::stable_partition(paths.begin(), paths.end(), [&](const std::string &path) {
        return std::any_of(withheld.begin(), withheld.end(),
                           [&](const std::string &w) { return within(path, w); });
    });
}

std::string summary_line(const RunSummary &s) {
    std::string line = "run " + s.run_id + ": ";
    if (s.interrupted != 0) {
        line += "INTERRUPTED by signal " + std::to_string(s.interrupted) + "; ";
    }
    line += std::to_string(s.trials) + " trial" + (s.trials == 1 ? "" : "s");
    std::string budgets = s.budget_trials.empty()
                              ? ""
                              : "; a budget stopped the target in trial" +
                                    std::string{s.budget_trials.size() == 1 ? " " : "s "} +
                                    join({s.budget_trials.begin(), s.budget_trials.end()});
    for (std::size_t i = 0; i < s.failed_services.size(); ++i) {
        budgets += (i == 0 ? "; services that failed to start: " : ", ") + s.failed_services[i];
    }
    if (s.opt_out && s.weakened.empty() && s.leaks.empty()) {
        line +=
            ", confinement opt-out: the targets' file system was not sandboxed and nothing "
            "was audited";
        return line + budgets;
    }
    std::vector<std::string> invalid;
    for (const auto &w : s.weakened) {
        invalid.push_back("the evaluation declares confinement, and " + w);
    }
    if (!s.observed.empty()) {
        invalid.push_back(std::to_string(s.observed.size()) + " path" +
                          (s.observed.size() == 1 ? "" : "s") + " outside the grants");
    }
    if (!s.lossy.empty()) {
        invalid.push_back("lossy " + trials_named(s.lossy));
    }
    if (!s.failed_tasks.empty()) {
        invalid.push_back("the task of " + trials_named(s.failed_tasks) +
                          " failed (an infrastructure error, no verdict)");
    }
    invalid.insert(invalid.end(), s.leaks.begin(), s.leaks.end());
    if (invalid.empty()) {
        line += ", no path outside the grants";
    } else {
        line += ", Invalid:";
        for (std::size_t i = 0; i < invalid.size(); ++i) {
            line += (i == 0 ? " " : "; ") + invalid[i];
        }
    }
    if (!s.refusal_trials.empty()) {
        line += "; egress refusals in " + trials_named(s.refusal_trials);
    }
    if (!s.socket_truncation_trials.empty()) {
        line += "; host sockets left reachable in " + trials_named(s.socket_truncation_trials);
    }
    return line + budgets;
}

bool is_run_id(const std::string &name) {
    // 20260101T120000.123456Z-a1b2c3, or without the fraction as ids were made before it.
    const auto digits = [&](std::size_t from, std::size_t count) {
        return name.size() >= from + count &&
               std::all_of(name.begin() + static_cast<std::ptrdiff_t>(from),
                           name.begin() + static_cast<std::ptrdiff_t>(from + count),
                           [](char c) { return c >= '0' && c <= '9'; });
    };
    if (!digits(0, 8) || name.size() < 9 || name[8] != 'T' || !digits(9, 6)) return false;
    std::size_t at = 15;
    if (name.size() > at && name[at] == '.') {
        if (!digits(at + 1, 6)) return false;
        at += 7;
    }
    if (name.size() < at + 3 || name[at] != 'Z' || name[at + 1] != '-') return false;
    return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(at + 2), name.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    });
}

std::optional<std::filesystem::path> latest_run(const std::filesystem::path &runs) {
    std::optional<std::filesystem::path> latest;
    std::error_code ec;
    for (const auto &e : std::filesystem::directory_iterator(runs, ec)) {
        const auto name = e.path().filename().string();
        if (!is_run_id(name) || !e.is_directory(ec) || e.is_symlink(ec)) continue;
        if (!latest || name > latest->filename().string()) latest = e.path();
    }
    return latest;
}

json isolation_manifest(const json &run, const evaluation::Evaluation &ev,
                        const std::map<std::string, std::set<int>> &observed,
                        const std::map<std::string, std::string> &reasons) {
    const std::string confinement = run.value("confinement", "");
    const bool opt_out = confinement == "opt-out";
    const auto os = audit::default_os_grants();
    json allowed = json::array();
    allowed.push_back({{"mount", "workspace"},
                       {"access", "read-write"},
                       {"what", "a fresh checkout of the evaluated commit for each trial"}});
    if (!opt_out) {  // an opted-out run makes no home: its targets keep the host's
        allowed.push_back({{"mount", "home"},
                           {"access", "read-write"},
                           {"what", "one private home per trial, removed when the trial ends"}});
    }
    allowed.push_back({{"mount", "temp"},
                       {"access", "read-write"},
                       {"what", "a private temp directory per call (TMPDIR)"}});
    allowed.push_back({{"mount", "operating system"},
                       {"access", "read-only"},
                       {"paths", bytes::list_to_json(os.os_dirs)}});
    for (const auto &entry : ev.registry) {
        if (!entry.system_paths.empty()) {
            allowed.push_back({{"mount", "systemPaths"},
                               {"access", "read-only"},
                               {"entry", entry.interface_id},
                               {"paths", bytes::list_to_json(entry.system_paths)}});
        }
    }
    // The grants of the logins: their files shown read-only in the home, never named by path.
    std::string login_note;
    if (const auto logins = run.find("logins"); logins != run.end() && logins->is_array()) {
        for (const auto &login : *logins) {
            const auto entry = login.value("interface", "");
            // A grant of an evaluation-layer agent (the judge's, a brief agent's) is written into
            // that agent's own home and reaches no target: it is no mount of the confinement.
            if (ev.entry(entry) == nullptr) continue;
            std::string granted;
            for (const auto &variable : login.value("variables", json::array())) {
                granted += (granted.empty() ? "" : ", ") + variable.get<std::string>();
            }
            for (const auto &file : login.value("files", json::array())) {
                allowed.push_back({{"mount", "login"},
                                   {"access", "read-only"},
                                   {"entry", entry},
                                   {"adapter", login.value("adapter", "")},
                                   {"what", "read-only login " + file.value("file", "")},
                                   {"homePath", file.value("homePath", "")}});
                granted += (granted.empty() ? "" : ", ") + file.value("file", "") + " read-only";
            }
            if (!granted.empty()) {
                login_note += "; entry '" + entry + "' is granted its login (" +
                              login.value("adapter", "") + "): " + granted;
            }
        }
    }
    json observed_mounts = json::array();
    for (const auto &[path, trials] : observed) {
        const auto reason = reasons.find(path);
        observed_mounts.push_back({{"path", bytes::to_json(path)},
                                   {"trials", std::vector<int>(trials.begin(), trials.end())},
                                   {"reason", reason == reasons.end() ? "" : reason->second}});
    }
    const std::string by =
        opt_out ? "Not withheld: the run opted out of confinement, so the runtime did not sandbox "
                  "the targets' file system"
                : "Withheld by the " + confinement + " confinement (backend '" +
                      run.value("backend", "") + "')";
    json forbidden = json::array();
    forbidden.push_back(
        {{"input", "the evaluation folder"},
         {"path", bytes::to_json(ev.folder.string())},
         {"note", by + (opt_out ? "" : ": covered by an empty read-only file system")}});
    if (run.contains("source") && run["source"].value("kind", "") == "git") {
        forbidden.push_back(
            {{"input", "the project's git directory"},
             {"path", run["source"]["gitDir"]},
             {"note", by + (opt_out ? "" : ": covered by an empty read-only file system")}});
    }
    forbidden.push_back(
        {{"input", "the user's private root (other trials' homes, the runtime's state)"},
         {"path", bytes::to_json(files::default_private_root().string())},
         {"note", by + (opt_out ? "" : ": covered, only the trial's home bound back")}});
    forbidden.push_back({{"input", "the host's Unix sockets and network"},
                         {"note", by + (opt_out ? ""
                                                : ": a network namespace with a loopback "
                                                  "only; host socket files masked")}});
    for (const auto &entry : ev.registry) {
        if (!entry.egress.empty()) {
            forbidden.push_back(
                {{"input",
                  "hosts other than the egress items of entry '" + entry.interface_id + "'"},
                 {"entry", entry.interface_id},
                 {"note", opt_out ? by
                                  : by + ": the entry's calls reach the listed hosts only "
                                         "through the runtime's CONNECT proxy"}});
        }
    }
    if (!login_note.empty()) {
        // Each withheld input is withheld but for what the logins grant: the note says what.
        for (auto &f : forbidden) {
            f["note"] = f["note"].get<std::string>() + login_note;
        }
    }
    return json{{"schemaVersion", 1},
                {"runId", run.value("runId", "")},
                {"confinement", confinement},
                {"trials", run.contains("trials") ? run["trials"].size() : 0},
                {"allowedMounts", allowed},
                {"observedMounts", observed_mounts},
                {"forbiddenInputs", forbidden}};
}

}  // namespace tea::evaluation
