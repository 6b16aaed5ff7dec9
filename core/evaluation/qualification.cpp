#include "evaluation/qualification.hpp"

#include <algorithm>
#include <tea/json_bytes.hpp>

namespace tea::evaluation {
namespace {

using nlohmann::json;

std::string arm_verdict(const std::vector<ArmResult> &arms, const std::string &arm) {
    const auto it =
        std::find_if(arms.begin(), arms.end(), [&](const ArmResult &a) { return a.arm == arm; });
    return it == arms.end() ? "not run" : it->verdict;
}

std::string arm_label(const ArmResult &a) {
    return a.arm == "mutated" ? "mutated arm " + a.mutation : a.arm;
}

}  // namespace

nlohmann::json arm_result_json(const ArmResult &arm) {
    return {{"arm", arm.arm},
            {"mutation", arm.mutation},
            {"mutationFile", arm.mutation_file},
            {"runId", arm.run_id},
            {"records", arm.records.string()},
            {"verdict", arm.verdict},
            {"reasons", arm.reasons}};
}

ArmResult arm_result_from_json(const nlohmann::json &j) {
    ArmResult a;
    a.arm = j.at("arm").get<std::string>();
    a.mutation = j.at("mutation").get<std::string>();
    a.mutation_file = j.at("mutationFile").get<std::string>();
    a.run_id = j.at("runId").get<std::string>();
    a.records = j.at("records").get<std::string>();
    a.verdict = j.at("verdict").get<std::string>();
    a.reasons = j.at("reasons").get<std::vector<std::string>>();
    return a;
}

QualificationVerdict judge(const std::vector<ArmResult> &arms) {
    QualificationVerdict q;
    for (const auto &a : arms) {
        if (a.verdict == "invalid") {
            q.why.push_back(arm_label(a) + " (run " + a.run_id + ") is Invalid" +
                            (a.reasons.empty() ? "" : ": " + a.reasons.front()));
        }
        if (a.arm != "mutated") continue;
        ++q.total;
        if (a.verdict == "fail") {
            ++q.detected;
        } else if (a.verdict == "pass") {
            q.undetected.push_back(a.mutation);
        }
    }
    if (!q.why.empty()) {
        q.verdict = "invalid";
        return q;
    }
    for (const char *arm : {"baseline", "repass"}) {
        if (const auto v = arm_verdict(arms, arm); v != "pass") {
            // An evaluation its own good project fails detects nothing but itself.
            q.why.push_back(std::string{arm} + " did not pass (" + v + ")");
        }
    }
    for (const auto &name : q.undetected) {
        q.why.push_back("mutation " + name + " was not detected: the project with it passed");
    }
    q.verdict = q.why.empty() ? "qualified" : "not qualified";
    return q;
}

nlohmann::json qualification_record(const std::string &id, const std::filesystem::path &evaluation,
                                    const std::string &started_at, const std::string &status,
                                    const std::vector<ArmResult> &arms,
                                    const QualificationVerdict &verdict) {
    json arm_records = json::array();
    for (const auto &a : arms) {
        json r{{"conditionArm", a.arm},
               {"runId", a.run_id},
               {"runDir", bytes::to_json(a.records.string())},
               {"verdict", a.verdict},
               {"reasons", bytes::list_to_json(a.reasons)}};
        if (a.arm == "mutated") {
            r["mutation"] = a.mutation;
            r["mutationFile"] = a.mutation_file;
            r["detected"] = a.verdict == "fail";
        }
        arm_records.push_back(std::move(r));
    }
    return json{{"schemaVersion", 1},
                {"qualificationId", id},
                {"status", status},
                {"startedAt", started_at},
                {"evaluation", bytes::to_json(evaluation.string())},
                {"verdict", verdict.verdict},
                {"mutationScore", {{"detected", verdict.detected}, {"total", verdict.total}}},
                {"undetected", verdict.undetected},
                {"baseline", arm_verdict(arms, "baseline")},
                {"repass", arm_verdict(arms, "repass")},
                {"reasons", bytes::list_to_json(verdict.why)},
                {"arms", arm_records},
                {"summary", qualification_summary(id, verdict, arms)}};
}

std::string qualification_summary(const std::string &id, const QualificationVerdict &verdict,
                                  const std::vector<ArmResult> &arms) {
    std::string out = "qualify " + id + ": ";
    out += verdict.verdict == "qualified"       ? "QUALIFIED"
           : verdict.verdict == "not qualified" ? "NOT QUALIFIED"
                                                : "INVALID";
    out += ": mutation score " + std::to_string(verdict.detected) + "/" +
           std::to_string(verdict.total);
    if (!verdict.undetected.empty()) {
        out += " (undetected:";
        for (const auto &name : verdict.undetected) out += " " + name;
        out += ")";
    }
    out +=
        "; baseline " + arm_verdict(arms, "baseline") + ", re-pass " + arm_verdict(arms, "repass");
    return out;
}

}  // namespace tea::evaluation
