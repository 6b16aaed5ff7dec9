// A trial task's spec and its outcome as the run reads it back (evaluation/trial_task.hpp): a spec
// that is not a run id and a trial from 1 never names a folder, and an outcome that is not whole,
// or that speaks of another run or trial, is refused before anything of it is merged.
#include "evaluation/trial_task.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace tea::evaluation {
namespace {

using nlohmann::json;

const std::string kRun = "20261206T125956.026242Z-RKAOZV";

// The outcome of trial 2 as trial_outcome writes one: a pass, one path listed.
json whole_outcome() {
    return json::parse(R"({
      "schemaVersion": 1, "runId": "20261206T125956.026242Z-RKAOZV", "trialIndex": 2,
      "interrupted": false,
      "trial": {"index": 2, "node": "n", "calls": [], "artifacts": {},
                "observedMountsChannel": "complete", "observedMounts": ["/etc/x"],
                "infrastructureErrors": 0, "budgetHits": [],
                "verdict": {"verdict": "pass", "reasons": []}},
      "observed": [{"path": "/etc/x", "reason": "outside the grants"},
                   {"path": {"base64": "/w=="}, "reason": "r"}],
      "egressRefusals": [{"trialIndex": 2, "entry": "t", "probe": "p", "refusals": [], "omitted": 0}],
      "servicesFailed": [{"trialIndex": 2, "entry": "t", "probe": "p", "reason": "r",
                          "infrastructureError": false}],
      "hostSocketTruncation": null, "confinement": "bubblewrap", "observer": "strace"})");
}

TEST(TrialTaskSpec, ARunIdAndATrialFromOneAndNothingElse) {
    EXPECT_EQ(parse_trial_task_spec(trial_task_spec(kRun, 3)), std::make_pair(kRun, 3));
    for (const std::string &bad : std::vector<std::string>{
             "", ":1", kRun, kRun + ":", kRun + ":0", kRun + ":-1", kRun + ":1x", kRun + ": 1",
             kRun + ":99999999999", "../" + kRun + ":1", kRun + "/..:1", "x" + kRun + ":1",
             kRun + "\n:1", std::string{"20261206T125956.026242Z-RK\0AOZV:1", 34}}) {
        try {
            (void)parse_trial_task_spec(bad);
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage) << bad;
            EXPECT_NE(std::string{e.what()}.find("--trial-task"), std::string::npos) << e.what();
        }
    }
}

TEST(TrialTaskOutcome, AWholeOutcomeOfThisTrialPasses) {
    EXPECT_NO_THROW(check_trial_outcome(whole_outcome(), kRun, 2));
    // Interrupted in the evaluator: no verdict, and still whole.
    auto interrupted = whole_outcome();
    interrupted["interrupted"] = true;
    interrupted["trial"]["verdict"] = nullptr;
    EXPECT_NO_THROW(check_trial_outcome(interrupted, kRun, 2));
}

TEST(TrialTaskOutcome, WhatIsNotWholeOrNotOfThisTrialIsRefused) {
    const std::vector<std::pair<std::string, std::function<void(json &)>>> changes{
        {"not an object", [](json &o) { o = json::array(); }},
        {"schemaVersion", [](json &o) { o["schemaVersion"] = 2; }},
        {"another run", [](json &o) { o["runId"] = "20261206T125956.026242Z-OTHER1"; }},
        {"another trial", [](json &o) { o["trialIndex"] = 1; }},
        {"trial index as text", [](json &o) { o["trialIndex"] = "2"; }},
        {"interrupted missing", [](json &o) { o.erase("interrupted"); }},
        {"the trial of another index", [](json &o) { o["trial"]["index"] = 3; }},
        {"no trial", [](json &o) { o.erase("trial"); }},
        {"calls not a list", [](json &o) { o["trial"]["calls"] = json::object(); }},
        {"no artifacts", [](json &o) { o["trial"].erase("artifacts"); }},
        {"a channel made up", [](json &o) { o["trial"]["observedMountsChannel"] = "fine"; }},
        {"no observedMounts", [](json &o) { o["trial"].erase("observedMounts"); }},
        {"negative errors", [](json &o) { o["trial"]["infrastructureErrors"] = -1; }},
        {"budgetHits not a list", [](json &o) { o["trial"]["budgetHits"] = 0; }},
        {"lossyReasons not a list", [](json &o) { o["trial"]["lossyReasons"] = "x"; }},
        {"no verdict, not interrupted", [](json &o) { o["trial"]["verdict"] = nullptr; }},
        {"observed not a list", [](json &o) { o["observed"] = "x"; }},
        {"a path without reason", [](json &o) { o["observed"][0].erase("reason"); }},
        {"a path that is no byte string",
         [](json &o) {
             o["observed"][0]["path"] = {{"base64", "@@"}};
         }},
        {"a refusal of another trial", [](json &o) { o["egressRefusals"][0]["trialIndex"] = 1; }},
        {"a failed service of no trial", [](json &o) { o["servicesFailed"].push_back(json{}); }},
        {"a failed service without its entry",
         [](json &o) { o["servicesFailed"][0].erase("entry"); }},
        {"a refusal whose probe is a number", [](json &o) { o["egressRefusals"][0]["probe"] = 1; }},
        {"no hostSocketTruncation", [](json &o) { o.erase("hostSocketTruncation"); }},
        {"a truncation of another trial",
         [](json &o) {
             o["hostSocketTruncation"] = {{"trialIndex", 1}};
         }},
        {"no confinement", [](json &o) { o["confinement"] = nullptr; }},
        {"an observer that is a number", [](json &o) { o["observer"] = 5; }},
    };
    for (const auto &[name, change] : changes) {
        auto outcome = whole_outcome();
        change(outcome);
        EXPECT_THROW(check_trial_outcome(outcome, kRun, 2), std::invalid_argument) << name;
    }
}

// The outcomes of one run, decided in the order of the trials (TrialOutcomes): each trial's own
// outcome, as trial_outcome would write it for trial `index`.
json outcome_of(int index) {
    auto o = whole_outcome();
    o["trialIndex"] = index;
    o["trial"]["index"] = index;
    for (const char *key : {"egressRefusals", "servicesFailed"}) {
        for (auto &item : o[key]) item["trialIndex"] = index;
    }
    return o;
}

// What a trial interrupted in its calls hands back adds to the run's lists only when it is of
// this run and trial and each item is of this trial: a task that lies adds nothing.
TEST(TrialTaskOutcome, AnInterruptedTrialsCallsAreTakenOnlyWhenOfThisTrial) {
    auto calls = json::parse(R"({
      "schemaVersion": 1, "runId": "20261206T125956.026242Z-RKAOZV", "trialIndex": 2,
      "interruptedInCalls": true,
      "egressRefusals": [{"trialIndex": 2, "entry": "t", "probe": "p", "refusals": [], "omitted": 0}],
      "servicesFailed": []})");
    EXPECT_TRUE(is_interrupted_calls_outcome(calls, kRun, 2));
    EXPECT_FALSE(is_interrupted_calls_outcome(calls, kRun, 3));
    EXPECT_FALSE(is_interrupted_calls_outcome(calls, "20261206T125956.026242Z-OTHER1", 2));
    // A whole outcome is not one, nor is a torn or altered file.
    EXPECT_FALSE(is_interrupted_calls_outcome(whole_outcome(), kRun, 2));
    EXPECT_FALSE(is_interrupted_calls_outcome(nullptr, kRun, 2));
    for (const auto &[pointer, value] : std::vector<std::pair<std::string, json>>{
             {"/interruptedInCalls", false},
             {"/interruptedInCalls", "true"},
             {"/schemaVersion", 2},
             {"/egressRefusals", json::object()},
             {"/egressRefusals/0/trialIndex", 1},
             {"/egressRefusals/0/entry", 7},
             {"/servicesFailed", json::array({{{"trialIndex", 2}, {"entry", "t"}}})}}) {
        auto altered = calls;
        altered[json::json_pointer{pointer}] = value;
        EXPECT_FALSE(is_interrupted_calls_outcome(altered, kRun, 2)) << pointer;
    }
}

TEST(TrialOutcomes, AnOutcomeMadeUnderAnotherConfinementOrObserverIsNeverMerged) {
    TrialOutcomes outcomes{kRun};
    // Control: outcomes made as the first are merged, and their trials count.
    for (int i = 1; i <= 2; ++i) {
        const auto same = outcomes.decide(outcome_of(i), "", i, false);
        EXPECT_TRUE(same.merge) << i;
        EXPECT_EQ(same.failed, "") << i;
    }
    auto opted_out = outcome_of(3);
    opted_out["confinement"] = "opt-out";
    const auto confinement = outcomes.decide(opted_out, "", 3, false);
    EXPECT_FALSE(confinement.merge);
    EXPECT_NE(confinement.failed.find(R"(confinement "opt-out")"), std::string::npos)
        << confinement.failed;
    EXPECT_NE(confinement.failed.find(R"(("bubblewrap", "strace"))"), std::string::npos)
        << confinement.failed;
    for (const json &observer : {json(nullptr), json("other")}) {
        auto unaudited = outcome_of(4);
        unaudited["observer"] = observer;
        const auto d = outcomes.decide(unaudited, "", 4, false);
        EXPECT_FALSE(d.merge) << observer;
        EXPECT_NE(d.failed.find("the observer " + observer.dump()), std::string::npos) << d.failed;
    }
    // What the first merged outcome settled stays: one refused changes nothing for the next.
    EXPECT_TRUE(outcomes.decide(outcome_of(5), "", 5, false).merge);
}

TEST(TrialOutcomes, ATrialInterruptedInItsEvaluatorWhenTheRunWasNotIsAFailedTask) {
    auto interrupted = outcome_of(1);
    interrupted["interrupted"] = true;
    interrupted["trial"]["verdict"] = nullptr;
    // A scheduler's time limit, a cancelled task: its calls count, and its trial is listed.
    const auto alone = TrialOutcomes{kRun}.decide(interrupted, "", 1, false);
    EXPECT_TRUE(alone.merge);
    EXPECT_EQ(alone.failed, "its trial was interrupted in the evaluator");
    // Control: the run's own interruption ends the trial as in one process, no task failed.
    const auto with_the_run = TrialOutcomes{kRun}.decide(interrupted, "", 1, true);
    EXPECT_TRUE(with_the_run.merge);
    EXPECT_EQ(with_the_run.failed, "");
}

TEST(TrialOutcomes, AnOutcomeMissingOrTornIsAFailedTaskThatSaysWhy) {
    TrialOutcomes outcomes{kRun};
    const auto missing = outcomes.decide(nullptr, "trial.json: No such file", 1, false);
    EXPECT_FALSE(missing.merge);
    EXPECT_EQ(missing.failed, "trial.json: No such file");
    auto torn = outcome_of(2);
    torn.erase("observed");
    const auto refused = outcomes.decide(torn, "", 2, false);
    EXPECT_FALSE(refused.merge);
    EXPECT_EQ(refused.failed.rfind("trial.json is refused: ", 0), 0U) << refused.failed;
}

}  // namespace
}  // namespace tea::evaluation
