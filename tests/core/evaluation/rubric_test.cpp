// rubric.md's criteria, the check of a judge's answer against the strict schema, and the
// aggregation of its scores to pass or fail (evaluation/rubric.hpp).
#include "evaluation/rubric.hpp"

#include <gtest/gtest.h>

namespace tea::evaluation {
namespace {

constexpr const char *kRubric = R"(# Greeting rubric

The program greets the user named in the probe.

## names-the-user (required, weight 3)
The greeting holds the user's name.

## polite
The greeting is polite.

```
## not-a-criterion (inside a code block)
```

## short (weight 2)
At most one line.
)";

Rubric parsed(const std::string &text) {
    std::vector<std::string> problems;
    auto rubric = parse_rubric(text, problems);
    EXPECT_TRUE(problems.empty()) << problems.front();
    return rubric;
}

std::vector<std::string> problems_of(const std::string &text) {
    std::vector<std::string> problems;
    (void)parse_rubric(text, problems);
    return problems;
}

bool any_holds(const std::vector<std::string> &problems, const std::string &part) {
    for (const auto &p : problems) {
        if (p.find(part) != std::string::npos) return true;
    }
    return false;
}

TEST(RubricParse, HeadingsAreCriteriaWithTheirAttributesAndText) {
    const auto rubric = parsed(kRubric);
    ASSERT_EQ(rubric.criteria.size(), 3U);
    EXPECT_EQ(rubric.criteria[0].id, "names-the-user");
    EXPECT_TRUE(rubric.criteria[0].required);
    EXPECT_EQ(rubric.criteria[0].weight, 3);
    EXPECT_EQ(rubric.criteria[0].description, "The greeting holds the user's name.");
    EXPECT_EQ(rubric.criteria[1].id, "polite");
    EXPECT_FALSE(rubric.criteria[1].required);
    EXPECT_EQ(rubric.criteria[1].weight, 1);
    // The fenced block is part of the text of the criterion above it.
    EXPECT_NE(rubric.criteria[1].description.find("## not-a-criterion"), std::string::npos);
    EXPECT_EQ(rubric.criteria[2].id, "short");
    EXPECT_EQ(rubric.criteria[2].weight, 2);
    EXPECT_NE(rubric.introduction.find("greets the user"), std::string::npos);
}

TEST(RubricParse, BadRubricsAreRefusedNamingTheLine) {
    EXPECT_TRUE(any_holds(problems_of("just text\n"), "holds no criterion"));
    EXPECT_TRUE(
        any_holds(problems_of("## Bad Id\ntext\n"), "line 1: 'Bad Id' is not a criterion id"));
    EXPECT_TRUE(
        any_holds(problems_of("## a\nx\n## a\ny\n"), "line 3: the criterion 'a' is given twice"));
    EXPECT_TRUE(any_holds(problems_of("## a\n"), "'a' has no description"));
    EXPECT_TRUE(any_holds(problems_of("## a (weight 0)\nx\n"), "weight must be an integer from 1"));
    EXPECT_TRUE(any_holds(problems_of("## a (weight 1000)\nx\n"), "weight must be an integer"));
    EXPECT_TRUE(any_holds(problems_of("## a (weight two)\nx\n"), "weight must be an integer"));
    EXPECT_TRUE(any_holds(problems_of("## a (optional)\nx\n"), "'optional' is not an attribute"));
    EXPECT_TRUE(any_holds(problems_of("## a (required, required)\nx\n"), "given twice"));
    EXPECT_TRUE(any_holds(problems_of("## a (required\nx\n"), "must close the heading"));
    EXPECT_TRUE(any_holds(problems_of(std::string("## a\nx\0y\n", 9)), "NUL"));
    EXPECT_TRUE(
        any_holds(problems_of("## a\n" + std::string(kMaxRubricBytes, 'x')), "the limit is"));
    std::string many;
    for (std::size_t i = 0; i <= kMaxCriteria; ++i) many += "## c" + std::to_string(i) + "\nx\n";
    EXPECT_TRUE(any_holds(problems_of(many), "criteria; the limit is 64"));
}

const Rubric &rubric() {
    static const Rubric r = parsed(kRubric);
    return r;
}

std::vector<std::string> answer_problems(const std::string &answer, std::int64_t max = 10) {
    std::vector<std::string> problems;
    EXPECT_FALSE(check_judge_answer(answer, rubric(), max, problems).has_value()) << answer;
    return problems;
}

constexpr const char *kGood =
    R"({"criteria": [{"id": "polite", "score": 7, "reason": "curt"},
                     {"id": "names-the-user", "score": 10, "reason": "says Ada"},
                     {"id": "short", "score": 10, "reason": "one line"}]})";

TEST(JudgeAnswer, AValidAnswerGivesTheScoresInTheRubricsOrder) {
    std::vector<std::string> problems;
    const auto scores = check_judge_answer(kGood, rubric(), 10, problems);
    ASSERT_TRUE(scores.has_value()) << problems.front();
    ASSERT_EQ(scores->size(), 3U);
    EXPECT_EQ((*scores)[0].id, "names-the-user");
    EXPECT_EQ((*scores)[0].score, 10);
    EXPECT_EQ((*scores)[1].id, "polite");
    EXPECT_EQ((*scores)[1].reason, "curt");
}

TEST(JudgeAnswer, EveryBreachOfTheSchemaIsNamed) {
    EXPECT_TRUE(any_holds(answer_problems("The scores are: 7, 10, 10"), "not a JSON object"));
    EXPECT_TRUE(any_holds(answer_problems(std::string{"```json\n"} + kGood + "\n```"),
                          "not a JSON object"));
    EXPECT_TRUE(any_holds(answer_problems("[]"), "not a JSON object"));
    EXPECT_TRUE(any_holds(answer_problems(R"({"scores": []})"), "no array 'criteria'"));
    auto extra = nlohmann::json::parse(kGood);
    extra["verdict"] = "pass";
    EXPECT_TRUE(any_holds(answer_problems(extra.dump()), "field 'verdict'"));
    auto missing = nlohmann::json::parse(kGood);
    missing["criteria"].erase(2);
    EXPECT_TRUE(any_holds(answer_problems(missing.dump()), "'short' is not scored"));
    auto twice = nlohmann::json::parse(kGood);
    twice["criteria"].push_back(twice["criteria"][0]);
    EXPECT_TRUE(any_holds(answer_problems(twice.dump()), "a second time"));
    auto unknown = nlohmann::json::parse(kGood);
    unknown["criteria"].push_back({{"id", "speed"}, {"score", 1}, {"reason", "r"}});
    EXPECT_TRUE(any_holds(answer_problems(unknown.dump()), "'speed', which is not a criterion"));
    for (const auto &score : {nlohmann::json(11), nlohmann::json(-1), nlohmann::json(7.5),
                              nlohmann::json("7"), nlohmann::json(18446744073709551615ULL)}) {
        auto bad = nlohmann::json::parse(kGood);
        bad["criteria"][0]["score"] = score;
        EXPECT_TRUE(any_holds(answer_problems(bad.dump()), "integer from 0 to 10")) << score;
    }
    auto no_reason = nlohmann::json::parse(kGood);
    no_reason["criteria"][1]["reason"] = " ";
    EXPECT_TRUE(any_holds(answer_problems(no_reason.dump()), "must have a reason"));
    auto other_field = nlohmann::json::parse(kGood);
    other_field["criteria"][1]["confidence"] = 0.9;
    EXPECT_TRUE(any_holds(answer_problems(other_field.dump()), "field 'confidence'"));
}

std::vector<CriterionScore> scores(std::int64_t names, std::int64_t polite, std::int64_t brief) {
    return {{"names-the-user", names, "n"}, {"polite", polite, "p"}, {"short", brief, "s"}};
}

TEST(RubricDecision, RequiredCriteriaAndTheThresholdDecide) {
    // weights 3, 1, 2 out of 10: (3*10 + 1*7 + 2*10) / 60 = 57/60 = 0.95
    auto d = decide_rubric(rubric(), scores(10, 7, 10), 10, 900);
    EXPECT_TRUE(d.pass);
    EXPECT_NEAR(d.weighted_score, 0.95, 1e-9);
    // Exactly at the threshold passes: the comparison is made in integers.
    EXPECT_TRUE(decide_rubric(rubric(), scores(10, 7, 10), 10, 950).pass);
    EXPECT_FALSE(decide_rubric(rubric(), scores(10, 7, 10), 10, 951).pass);
    // A required criterion short of full fails whatever the mean.
    d = decide_rubric(rubric(), scores(9, 10, 10), 10, 0);
    EXPECT_FALSE(d.pass);
    ASSERT_FALSE(d.reasons.empty());
    EXPECT_NE(d.reasons[0].find("'names-the-user' scored 9/10"), std::string::npos);
    // Below the threshold, with every required criterion full.
    d = decide_rubric(rubric(), scores(10, 0, 0), 10, 700);
    EXPECT_FALSE(d.pass);
    EXPECT_NE(d.reasons.back().find("below the threshold"), std::string::npos);
    // The default threshold, 1: every criterion at full score.
    EXPECT_TRUE(decide_rubric(rubric(), scores(10, 10, 10), 10, 1000).pass);
    EXPECT_FALSE(decide_rubric(rubric(), scores(10, 10, 9), 10, 1000).pass);
}

}  // namespace
}  // namespace tea::evaluation
