// A qualification of an evaluation (qualify): whether its probes tell a good project from a
// broken one. Its arms are runs of the evaluation, each recorded as run records it
// (EVAL_DIR/runs/<run-id>/, run.json's conditionArm): the baseline (the project as committed),
// one mutated arm per mutation (mutations.hpp), and the re-pass (as committed again, after them).
// The verdict and its record (qualification.json) are decided here from the arms' verdicts.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tea::evaluation {

struct ArmResult {
    std::string arm;       // "baseline", "mutated" or "repass"
    std::string mutation;  // the mutated arm's mutation
    std::string mutation_file;
    std::string run_id;
    std::filesystem::path records;
    std::string verdict;  // score's: "pass", "fail" or "invalid"
    std::vector<std::string> reasons;
};

struct QualificationVerdict {
    std::string verdict;  // "qualified", "not qualified" or "invalid"
    int detected = 0;
    int total = 0;
    std::vector<std::string> undetected;  // mutations whose arm passed
    std::vector<std::string> why;         // each reason the evaluation is not qualified or invalid
};

// An arm's result as an arm process hands it to the qualify that started it (qualify --jobs), and
// back; from_json throws nlohmann::json::exception on a missing or mistyped field.
nlohmann::json arm_result_json(const ArmResult &arm);
ArmResult arm_result_from_json(const nlohmann::json &j);

// Invalid when any arm is (its audit listed a path, or its records prove nothing); qualified
// when the baseline and the re-pass pass and every mutated arm fails.
QualificationVerdict judge(const std::vector<ArmResult> &arms);

// qualification.json (docs/records.md, docs/schema/qualification.schema.json).
nlohmann::json qualification_record(const std::string &id, const std::filesystem::path &evaluation,
                                    const std::string &started_at, const std::string &status,
                                    const std::vector<ArmResult> &arms,
                                    const QualificationVerdict &verdict);

// "qualify <id>: NOT QUALIFIED: mutation score 1/2 (undetected: x); baseline pass, re-pass pass".
std::string qualification_summary(const std::string &id, const QualificationVerdict &verdict,
                                  const std::vector<ArmResult> &arms);

}  // namespace tea::evaluation
