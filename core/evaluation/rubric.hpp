// A rubric judge's criteria and the arithmetic of its verdict (docs/agent-evaluations.md, "Rubric
// judges"): rubric.md read into criteria, a judge's answer checked against the strict schema
// {"criteria": [{"id", "score", "reason"}, ...]}, and the scores aggregated to pass or fail.
//
// rubric.md is Markdown. Each criterion is a level-two heading "## <id>", optionally followed by
// attributes in parentheses ("## correctness (required, weight 3)"), and the text up to the next
// such heading describes it. The text before the first criterion is the rubric's introduction.
// Every criterion is scored from 0 to the evaluation's maxScore.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tea::evaluation {

inline constexpr std::size_t kMaxRubricBytes = std::size_t{256} << 10U;  // 256 KiB
inline constexpr std::size_t kMaxCriteria = 64;
inline constexpr std::size_t kMaxCriterionIdLength = 64;
inline constexpr std::int64_t kMaxCriterionWeight = 100;
inline constexpr std::int64_t kMaxRubricScore = 100;
inline constexpr std::size_t kMaxReasonBytes = 4096;

struct Criterion {
    std::string id;  // [a-z0-9][a-z0-9_-]*, unique in the rubric
    std::int64_t weight = 1;
    bool required = false;  // the trial fails unless it is scored at maxScore
    std::string description;
};

struct Rubric {
    std::string introduction;
    std::vector<Criterion> criteria;  // in file order
};

// Reads rubric.md's text. Every problem found goes to `problems` as a sentence that names the line
// ("line 7: ..."); the rubric is usable only when none was.
Rubric parse_rubric(const std::string &text, std::vector<std::string> &problems);

// One criterion as the judge scored it.
struct CriterionScore {
    std::string id;
    std::int64_t score = 0;
    std::string reason;
};

// The judge's answer text checked against the schema: every criterion of `rubric` exactly once,
// an integer score from 0 to max_score, a non-empty reason, no other field. Returns the scores
// in the rubric's order, or nothing with each problem in `problems` (the sentences a retry tells
// the judge).
std::optional<std::vector<CriterionScore>> check_judge_answer(const std::string &answer,
                                                              const Rubric &rubric,
                                                              std::int64_t max_score,
                                                              std::vector<std::string> &problems);

struct RubricDecision {
    bool pass = false;
    // sum(weight * score) / (sum(weight) * max_score), for the record; the decision is made in
    // integers.
    double weighted_score = 0;
    std::vector<std::string> reasons;  // why it failed, or the score that passed
};

// Pass when every required criterion has max_score and the weighted score is at least
// threshold_permille / 1000. Exact: the comparison is made in integers.
RubricDecision decide_rubric(const Rubric &rubric, const std::vector<CriterionScore> &scores,
                             std::int64_t max_score, std::int64_t threshold_permille);

}  // namespace tea::evaluation
