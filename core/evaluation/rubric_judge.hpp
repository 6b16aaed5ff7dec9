// The rubric judge of a trial (evaluator kind "rubric", docs/agent-evaluations.md#rubric-judges):
// an agent CLI (evaluation_agent.hpp) asked to score the trial's artifacts, as the trial's
// records hold them (copied out and redacted), against the criteria of rubric.md (rubric.hpp).
// An answer that breaks the schema is sent back, with what was wrong, in the same session, up to
// the evaluation's retries; the scores of an accepted answer decide pass or fail. A judge that
// never gives an accepted answer leaves the trial with verdict "error", never pass or fail.
//
// Records, in the trial's folder: judge/NN-prompt.txt, NN-answer.json (the CLI's JSON result)
// and NN-stderr.txt for each turn, and verdict.json with the command evaluator's fields and a
// "judge" object (the model, each criterion's score and reason, each turn's files).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "evaluation/trials.hpp"

namespace tea::evaluation {

// The name the judge's login grant is asked and recorded under: no registry entry can have it
// (an interface id holds no space).
inline constexpr const char *kJudgeLoginEntry = "rubric judge";

// The largest part of one artifact, and of all of them, a judge's prompt shows.
inline constexpr std::uint64_t kJudgeArtifactBytes = std::uint64_t{256} << 10U;  // 256 KiB
inline constexpr std::uint64_t kJudgeArtifactsBytes = std::uint64_t{1} << 20U;   // 1 MiB

// The first prompt of a trial's judge: the rubric, the artifacts (`artifacts`: the trial's record
// of them; their files under trial_dir), and the schema of the answer.
std::string judge_prompt(const RubricJudge &judge, const nlohmann::json &artifacts,
                         const std::filesystem::path &trial_dir);

// Grades the trial and writes its verdict.json; returns the verdict's record, or null when a
// signal interrupted the run (state.interrupted is then set).
nlohmann::json run_rubric_judge(RunState &state, int index, const std::filesystem::path &trial_dir,
                                const nlohmann::json &artifacts, files::RunDirectory &private_dir,
                                TrialProgress &progress);

}  // namespace tea::evaluation
