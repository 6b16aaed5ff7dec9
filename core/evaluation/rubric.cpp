#include "evaluation/rubric.hpp"

#include <algorithm>
#include <set>
#include <sstream>

namespace tea::evaluation {

namespace {

using nlohmann::json;

bool valid_id(const std::string &id) {
    if (id.empty() || id.size() > kMaxCriterionIdLength) {
        return false;
    }
    const auto lower_or_digit = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    };
    if (!lower_or_digit(id.front())) {
        return false;
    }
    return std::all_of(id.begin(), id.end(),
                       [&](char c) { return lower_or_digit(c) || c == '-' || c == '_'; });
}

std::string trim(const std::string &text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) {
        return {};
    }
    return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// "required", "weight N": the attributes of a heading, comma-separated.
void read_attributes(const std::string &list, Criterion &criterion, const std::string &where,
                     std::vector<std::string> &problems) {
    std::stringstream items{list};
    std::set<std::string> seen;
    for (std::string item; std::getline(items, item, ',');) {
        item = trim(item);
        const auto name = item.substr(0, item.find(' '));
        if (!seen.insert(name).second) {
            problems.push_back(where + ": '" + name + "' is given twice");
        } else if (item == "required") {
            criterion.required = true;
        } else if (name == "weight") {
            const auto value = trim(item.substr(name.size()));
            const bool digits = !value.empty() && value.size() <= 3 &&
                                std::all_of(value.begin(), value.end(),
                                            [](char c) { return c >= '0' && c <= '9'; });
            const auto weight = digits ? std::stoll(value) : 0;
            if (weight < 1 || weight > kMaxCriterionWeight) {
                problems.push_back(where + ": the weight must be an integer from 1 to " +
                                   std::to_string(kMaxCriterionWeight) + ", not '" + value + "'");
            } else {
                criterion.weight = weight;
            }
        } else {
            problems.push_back(where + ": '" + item +
                               "' is not an attribute of a criterion (required, weight N)");
        }
    }
}

}  // namespace

Rubric parse_rubric(const std::string &text, std::vector<std::string> &problems) {
    Rubric rubric;
    if (text.size() > kMaxRubricBytes) {
        problems.push_back("it is " + std::to_string(text.size()) + " bytes; the limit is " +
                           std::to_string(kMaxRubricBytes));
        return rubric;
    }
    if (text.find('\0') != std::string::npos) {
        problems.push_back("it holds a NUL byte");
        return rubric;
    }
    std::set<std::string> ids;
    std::istringstream lines{text};
    std::size_t number = 0;
    std::string *body = &rubric.introduction;
    bool in_fence = false;  // a "## " line in a fenced code block is text, not a heading
    for (std::string line; std::getline(lines, line);) {
        ++number;
        if (line.rfind("```", 0) == 0 || line.rfind("~~~", 0) == 0) {
            in_fence = !in_fence;
        }
        if (in_fence || line.rfind("## ", 0) != 0) {
            *body += line + "\n";
            continue;
        }
        const auto where = "line " + std::to_string(number);
        auto heading = trim(line.substr(3));
        Criterion criterion;
        if (const auto open = heading.find('('); open != std::string::npos) {
            if (heading.back() != ')') {
                problems.push_back(where + ": the attributes must close the heading with ')'");
            } else {
                read_attributes(heading.substr(open + 1, heading.size() - open - 2), criterion,
                                where, problems);
            }
            heading = trim(heading.substr(0, open));
        }
        if (!valid_id(heading)) {
            problems.push_back(where + ": '" + heading +
                               "' is not a criterion id (lower-case letters, digits, '-' and "
                               "'_', starting with a letter or digit, at most " +
                               std::to_string(kMaxCriterionIdLength) + " characters)");
        } else if (!ids.insert(heading).second) {
            problems.push_back(where + ": the criterion '" + heading + "' is given twice");
        }
        criterion.id = heading;
        rubric.criteria.push_back(std::move(criterion));
        body = &rubric.criteria.back().description;
    }
    for (auto &criterion : rubric.criteria) {
        criterion.description = trim(criterion.description);
        if (criterion.description.empty()) {
            problems.push_back("the criterion '" + criterion.id +
                               "' has no description (the text below its heading)");
        }
    }
    rubric.introduction = trim(rubric.introduction);
    if (rubric.criteria.empty()) {
        problems.push_back("it holds no criterion (a heading '## <id>')");
    } else if (rubric.criteria.size() > kMaxCriteria) {
        problems.push_back("it holds " + std::to_string(rubric.criteria.size()) +
                           " criteria; the limit is " + std::to_string(kMaxCriteria));
    }
    return rubric;
}

std::optional<std::vector<CriterionScore>> check_judge_answer(const std::string &answer,
                                                              const Rubric &rubric,
                                                              std::int64_t max_score,
                                                              std::vector<std::string> &problems) {
    const auto start = problems.size();
    const auto doc = json::parse(answer, nullptr, false);
    if (!doc.is_object()) {
        problems.push_back(
            "the answer is not a JSON object (it must be the object alone, with "
            "no other text around it)");
        return std::nullopt;
    }
    for (const auto &item : doc.items()) {
        if (item.key() != "criteria") {
            problems.push_back("the answer has a field '" + item.key() +
                               "'; it may have 'criteria' alone");
        }
    }
    if (!doc.contains("criteria") || !doc["criteria"].is_array()) {
        problems.push_back("the answer has no array 'criteria'");
        return std::nullopt;
    }
    std::vector<std::optional<CriterionScore>> found(rubric.criteria.size());
    const auto &items = doc["criteria"];
    for (std::size_t i = 0; i < items.size(); ++i) {
        const auto &item = items[i];
        const auto where = "criteria[" + std::to_string(i) + "]";
        if (!item.is_object()) {
            problems.push_back(where + " is not an object {id, score, reason}");
            continue;
        }
        for (const auto &field : item.items()) {
            if (field.key() != "id" && field.key() != "score" && field.key() != "reason") {
                problems.push_back(where + " has a field '" + field.key() +
                                   "'; it may have id, score and reason alone");
            }
        }
        if (!item.contains("id") || !item["id"].is_string()) {
            problems.push_back(where + " has no string 'id'");
            continue;
        }
        const auto id = item["id"].get<std::string>();
        const auto it = std::find_if(rubric.criteria.begin(), rubric.criteria.end(),
                                     [&](const Criterion &c) { return c.id == id; });
        if (it == rubric.criteria.end()) {
            problems.push_back(where + " scores '" + id + "', which is not a criterion");
            continue;
        }
        auto &slot = found[static_cast<std::size_t>(it - rubric.criteria.begin())];
        if (slot) {
            problems.push_back(where + " scores '" + id + "' a second time");
            continue;
        }
        const auto &score = item.contains("score") ? item["score"] : json{};
        // An unsigned score above the range would wrap when read as signed.
        const bool integer = score.is_number_integer() &&
                             !(score.is_number_unsigned() &&
                               score.get<std::uint64_t>() > static_cast<std::uint64_t>(max_score));
        if (!integer || score.get<std::int64_t>() < 0 || score.get<std::int64_t>() > max_score) {
            problems.push_back(where + " ('" + id +
                               "') must have a score that is an integer from 0 to " +
                               std::to_string(max_score));
            continue;
        }
        const auto &reason = item.contains("reason") ? item["reason"] : json{};
        if (!reason.is_string() || trim(reason.get<std::string>()).empty() ||
            reason.get<std::string>().size() > kMaxReasonBytes) {
            problems.push_back(where + " ('" + id +
                               "') must have a reason: a non-empty string of at most " +
                               std::to_string(kMaxReasonBytes) + " bytes");
            continue;
        }
        slot = CriterionScore{id, score.get<std::int64_t>(), reason.get<std::string>()};
    }
    for (std::size_t i = 0; i < found.size(); ++i) {
        if (!found[i] && std::none_of(problems.begin() + static_cast<std::ptrdiff_t>(start),
                                      problems.end(), [&](const std::string &p) {
                                          return p.find("'" + rubric.criteria[i].id + "'") !=
                                                 std::string::npos;
                                      })) {
            problems.push_back("the criterion '" + rubric.criteria[i].id + "' is not scored");
        }
    }
    if (problems.size() != start) {
        return std::nullopt;
    }
    std::vector<CriterionScore> scores;
    for (auto &score : found) {
        scores.push_back(std::move(*score));
    }
    return scores;
}

RubricDecision decide_rubric(const Rubric &rubric, const std::vector<CriterionScore> &scores,
                             std::int64_t max_score, std::int64_t threshold_permille) {
    RubricDecision decision;
    std::int64_t earned = 0;  // sum(weight * score)
    std::int64_t weights = 0;
    std::vector<std::string> short_of;
    for (std::size_t i = 0; i < rubric.criteria.size() && i < scores.size(); ++i) {
        const auto &criterion = rubric.criteria[i];
        earned += criterion.weight * scores[i].score;
        weights += criterion.weight;
        if (criterion.required && scores[i].score != max_score) {
            short_of.push_back("the required criterion '" + criterion.id + "' scored " +
                               std::to_string(scores[i].score) + "/" + std::to_string(max_score) +
                               ": " + scores[i].reason);
        }
    }
    // Bounded: 64 criteria * weight 100 * score 100 * 1000 is far below 2^63.
    const auto possible = weights * max_score;
    decision.weighted_score =
        possible == 0 ? 0 : static_cast<double>(earned) / static_cast<double>(possible);
    const bool above = earned * 1000 >= threshold_permille * possible;
    std::ostringstream summary;
    summary.precision(3);
    summary << "weighted score " << decision.weighted_score << " (" << earned << "/" << possible
            << "), threshold " << static_cast<double>(threshold_permille) / 1000.0;
    decision.pass = above && short_of.empty() && possible > 0;
    decision.reasons = std::move(short_of);
    if (!above) {
        decision.reasons.push_back(summary.str() + ": below the threshold");
    } else if (decision.pass) {
        decision.reasons.push_back(summary.str());
    }
    return decision;
}

}  // namespace tea::evaluation
