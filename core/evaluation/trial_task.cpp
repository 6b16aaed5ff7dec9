#include "evaluation/trial_task.hpp"

#include <charconv>
#include <initializer_list>
#include <stdexcept>
#include <tea/json_bytes.hpp>

#include "evaluation/budgets.hpp"
#include "evaluation/historical_probes.hpp"
#include "evaluation/leak_detectors.hpp"
#include "evaluation/run_records.hpp"
#include "util/error.hpp"

namespace tea::evaluation {

namespace stdfs = std::filesystem;
using nlohmann::json;

namespace {

void require(bool holds, const std::string &what) {
    if (!holds) throw std::invalid_argument(what);
}

bool integer_is(const json &doc, const char *key, int value) {
    return doc.is_object() && doc.contains(key) && doc[key].is_number_integer() &&
           doc[key].get<std::int64_t>() == value;
}

// Every element of `list` an object of this trial, with each of `strings` a string (the fields
// the run's summary reads from it).
void require_trial_items(const json &outcome, const char *key, int index,
                         std::initializer_list<const char *> strings) {
    require(outcome.contains(key) && outcome[key].is_array(), std::string{key} + " is not a list");
    for (const auto &item : outcome[key]) {
        require(integer_is(item, "trialIndex", index),
                std::string{key} + " holds an item of another trial");
        for (const char *field : strings) {
            require(item.contains(field) && item[field].is_string(),
                    std::string{key} + " holds an item without its " + field);
        }
    }
}

}  // namespace

std::string trial_task_spec(const std::string &run_id, int index) {
    return run_id + ":" + std::to_string(index);
}

std::pair<std::string, int> parse_trial_task_spec(const std::string &spec) {
    const auto colon = spec.rfind(':');
    int index = 0;
    const char *first = colon == std::string::npos ? nullptr : spec.data() + colon + 1;
    const char *last = spec.data() + spec.size();
    const auto [end, error] = first != nullptr ? std::from_chars(first, last, index)
                                               : std::from_chars_result{nullptr, std::errc{}};
    // Only a run id names a folder of runs/: a spec cannot lead a task out of it.
    if (first == nullptr || error != std::errc{} || end != last || index < 1 ||
        !is_run_id(spec.substr(0, colon))) {
        throw usage_error("--trial-task takes RUN_ID:N (a run id and a trial from 1), not '" +
                          spec + "'");
    }
    return {spec.substr(0, colon), index};
}

stdfs::path trial_outcome_file(const stdfs::path &records, int index) {
    return records / "trials" / std::to_string(index) / "trial.json";
}

void adopt_run(RunState &state, const json &run, int index, files::RunDirectory &private_dir) {
    const auto &ev = state.ev;
    const auto runs = ev.folder / "runs";
    state.records = runs / state.run_id;
    std::error_code ec;
    // Records written through a link would land wherever the link points.
    if (stdfs::is_symlink(runs, ec) ||
        !stdfs::is_directory(stdfs::symlink_status(state.records, ec))) {
        throw usage_error(state.records.string() +
                          " is not a folder of the evaluation's runs; trial task " +
                          std::to_string(index) + " is not run");
    }
    const auto mismatch = [&](const std::string &what) {
        throw usage_error((state.records / "run.json").string() + " " + what + "; trial task " +
                          std::to_string(index) + " is not run");
    };
    if (!run.is_object() || run.value("runId", "") != state.run_id) mismatch("names another run");
    if (run.value("status", "") != "running") mismatch("does not say the run is running");
    if (run.value("conditionArm", "") != "run") mismatch("is an arm of a qualification");
    if (!integer_is(run, "trialCount", ev.trials)) {
        mismatch("plans another number of trials than evaluation.json");
    }
    if (index > ev.trials) mismatch("plans fewer trials than " + std::to_string(index));
    const auto &source = run.contains("source") ? run["source"] : json{};
    const bool same_source =
        source.is_object() &&
        (state.source.git ? source.value("kind", "") == "git" &&
                                source.value("commit", "") == state.source.commit
                          : source.value("kind", "") == "copy");
    // A task on a node whose project moved on would grade another commit under this run's name.
    if (!same_source) mismatch("names another source than the commit this task resolved");
    state.run = run;
    const auto &settings = state.session.runtime().config.budgets;
    state.budget = configured_budget(settings);
    state.disk_reason = choose_disk(state, settings);
    state.revisions = check_revisions(ev, state.source, private_dir);
    state.detectors = RunLeakDetectors::for_trial_task(
        state.records, run.contains("canaries") ? run["canaries"] : json{});
    // The trial's folder is this task's alone: what an earlier attempt left is not its record.
    const auto trial_dir = state.records / "trials" / std::to_string(index);
    if (stdfs::exists(stdfs::symlink_status(trial_dir, ec))) files::remove_tree(trial_dir);
}

void write_trial_outcome(const RunState &state, const json &outcome) {
    write_record(state, trial_outcome_file(state.records, outcome.at("trialIndex").get<int>()),
                 outcome);
}

void check_trial_outcome(const json &outcome, const std::string &run_id, int index) {
    require(outcome.is_object(), "it is not a JSON object");
    require(integer_is(outcome, "schemaVersion", 1), "its schemaVersion is not 1");
    require(outcome.value("runId", "") == run_id, "it names another run");
    require(integer_is(outcome, "trialIndex", index), "it names another trial");
    require(outcome.contains("interrupted") && outcome["interrupted"].is_boolean(),
            "it does not say whether the trial was interrupted");
    const auto &trial = outcome.contains("trial") ? outcome["trial"] : json{};
    require(integer_is(trial, "index", index), "its trial is not trial " + std::to_string(index));
    require(trial.contains("calls") && trial["calls"].is_array(), "its trial has no calls");
    require(trial.contains("artifacts") && trial["artifacts"].is_object(),
            "its trial has no artifacts");
    const auto channel = trial.value("observedMountsChannel", "");
    require(channel == "complete" || channel == "lossy" || channel == "unaudited",
            "its trial has no observedMountsChannel");
    require(trial.contains("observedMounts") && trial["observedMounts"].is_array(),
            "its trial has no observedMounts");
    require(trial.contains("infrastructureErrors") &&
                trial["infrastructureErrors"].is_number_unsigned(),
            "its trial has no infrastructureErrors");
    require(trial.contains("budgetHits") && trial["budgetHits"].is_array(),
            "its trial has no budgetHits");
    require(!trial.contains("lossyReasons") || trial["lossyReasons"].is_array(),
            "its trial's lossyReasons is not a list");
    require(trial.contains("verdict") &&
                (trial["verdict"].is_object() ||
                 (trial["verdict"].is_null() && outcome["interrupted"].get<bool>())),
            "its trial has no verdict");
    require(outcome.contains("observed") && outcome["observed"].is_array(),
            "observed is not a list");
    for (const auto &o : outcome["observed"]) {
        require(
            o.is_object() && o.contains("path") && o.contains("reason") && o["reason"].is_string(),
            "observed holds an item without a path and a reason");
        (void)bytes::from_json(o["path"], "observed[].path");
    }
    require_trial_items(outcome, "egressRefusals", index, {"entry", "probe"});
    require_trial_items(outcome, "servicesFailed", index, {"entry", "probe", "reason"});
    const auto &truncation =
        outcome.contains("hostSocketTruncation") ? outcome["hostSocketTruncation"] : json{};
    require(outcome.contains("hostSocketTruncation") &&
                (truncation.is_null() || integer_is(truncation, "trialIndex", index)),
            "hostSocketTruncation is not of this trial");
    require(outcome.contains("confinement") && outcome["confinement"].is_string(),
            "it names no confinement");
    require(outcome.contains("observer") &&
                (outcome["observer"].is_string() || outcome["observer"].is_null()),
            "it names no observer");
}

json interrupted_calls_outcome(const RunState &state, int index) {
    return {{"schemaVersion", 1},
            {"runId", state.run_id},
            {"trialIndex", index},
            {"interruptedInCalls", true},
            {"egressRefusals", state.egress_refusals},
            {"servicesFailed", state.services_failed}};
}

bool is_interrupted_calls_outcome(const json &outcome, const std::string &run_id, int index) {
    try {
        require(outcome.is_object() && integer_is(outcome, "schemaVersion", 1) &&
                    outcome.value("runId", "") == run_id &&
                    integer_is(outcome, "trialIndex", index) &&
                    outcome.contains("interruptedInCalls") && outcome["interruptedInCalls"] == true,
                "not an interrupted trial's calls");
        require_trial_items(outcome, "egressRefusals", index, {"entry", "probe"});
        require_trial_items(outcome, "servicesFailed", index, {"entry", "probe", "reason"});
    } catch (const std::invalid_argument &) {
        return false;
    }
    return true;
}

bool merge_interrupted_calls(RunState &state, const json &outcome, int index) {
    if (!is_interrupted_calls_outcome(outcome, state.run_id, index)) return false;
    for (const auto &r : outcome["egressRefusals"]) state.egress_refusals.push_back(r);
    for (const auto &f : outcome["servicesFailed"]) state.services_failed.push_back(f);
    return true;
}

OutcomeDecision TrialOutcomes::decide(const json &outcome, const std::string &unread, int index,
                                      bool run_interrupted) {
    if (outcome.is_null()) return {false, unread};
    try {
        check_trial_outcome(outcome, run_id_, index);
    } catch (const std::exception &e) {
        // A task that lies or a record torn is never merged, not even in part.
        return {false, "trial.json is refused: " + std::string{e.what()}};
    }
    const std::pair<json, json> under{outcome["confinement"], outcome["observer"]};
    if (made_under_ && under != *made_under_) {
        // A node configured otherwise: its trial was not made as the others were, and run.json
        // would name a confinement or observer that some trial did not have.
        return {false, "its trial was made under the confinement " + under.first.dump() +
                           " and the observer " + under.second.dump() + ", not as the others' (" +
                           made_under_->first.dump() + ", " + made_under_->second.dump() + ")"};
    }
    made_under_ = under;
    // A task interrupted in its evaluator when the run was not (a scheduler's time limit, a
    // cancelled task): what its calls did counts, and its trial has no verdict.
    if (outcome["interrupted"].get<bool>() && !run_interrupted) {
        return {true, "its trial was interrupted in the evaluator"};
    }
    return {true, {}};
}

}  // namespace tea::evaluation
