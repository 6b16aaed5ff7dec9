#include <algorithm>
#include <cstdio>
#include <string_view>

#include "report/html_text.hpp"
#include "report/page.hpp"
#include "report/run_report.hpp"

namespace tea::report {
namespace {

using nlohmann::json;

// The mutation score as a bar: detected mutations in one colour, undetected in another, and the
// undetected ones named beneath it.
std::string mutation_plot(double detected, double total) {
    if (total <= 0) return {};
    constexpr double kWidth = 600;
    const double d = std::clamp(detected, 0.0, total) / total * kWidth;
    std::string out = "<svg role=\"img\" viewBox=\"0 0 " + decimal(kWidth + 20) +
                      " 56\" width=\"620\"><title>Mutations detected and undetected</title>";
    out += "<rect x=\"10\" y=\"6\" width=\"" + decimal(d) +
           "\" height=\"22\" fill=\"#43a047\"><title>detected</title></rect>";
    out += "<rect x=\"" + decimal(10 + d) + "\" y=\"6\" width=\"" + decimal(kWidth - d) +
           "\" height=\"22\" fill=\"#c62828\"><title>undetected</title></rect>";
    out += "<text x=\"10\" y=\"46\">detected " + decimal(detected) + "</text>";
    out += "<text x=\"" + decimal(kWidth + 10) + "\" y=\"46\" text-anchor=\"end\">undetected " +
           decimal(total - std::clamp(detected, 0.0, total)) + "</text></svg>";
    return out;
}

// What the arms' own records say, as qualify decides it: Invalid when any arm is, qualified when
// the baseline and the re-pass pass and every mutated arm fails, not qualified otherwise.
struct Decided {
    std::string verdict;
    double detected = 0;
    double total = 0;
};

Decided decide_arms(const QualificationReportInput &in) {
    Decided d;
    const auto &arms = field_list(in.qualification, "arms");
    bool invalid = !arms.is_array() || in.arms.empty();
    bool baseline = false;
    bool repass = false;
    for (std::size_t i = 0; arms.is_array() && i < in.arms.size() && i < arms.size(); ++i) {
        const auto kind = field_text(arms[i], "conditionArm");
        const auto &v = in.arms[i].verdict;
        invalid = invalid || v == "invalid";
        if (kind == "baseline") baseline = v == "pass";
        if (kind == "repass") repass = v == "pass";
        if (kind == "mutated") {
            d.total += 1;
            d.detected += v == "fail" ? 1 : 0;
        }
    }
    d.verdict = invalid                                       ? "invalid"
                : baseline && repass && d.detected == d.total ? "qualified"
                                                              : "not qualified";
    return d;
}

}  // namespace

std::string qualification_report(const QualificationReportInput &in) {
    const auto &q = in.qualification;
    const auto &b = in.bounds;
    std::string h;
    // The headline is what the arms' records prove, not what qualification.json claims: a record
    // edited to say "qualified" does not make the page say so.
    const auto decided = decide_arms(in);
    const auto &verdict = decided.verdict;
    const auto claimed = field_text(q, "verdict");
    const std::string cls = verdict == "qualified"       ? "v-pass"
                            : verdict == "not qualified" ? "v-fail"
                                                         : "v-invalid";
    h += "<header class=\"verdict " + cls + "\"><h1 id=\"verdict\">" + verdict + "</h1>";
    h +=
        "<p>Qualification <code>" + html_excerpt(field_text(q, "qualificationId"), 200) + "</code>";
    if (!q.is_object()) h += " (qualification.json is missing or torn)";
    h += "</p>";
    if (claimed != verdict) {
        h += "<p class=\"bad\" id=\"disagreement\">qualification.json says &quot;" +
             html_excerpt(claimed, 40) + "&quot;; its arms' records say &quot;" + verdict +
             "&quot;.</p>";
    }
    const auto &reasons = field_list(q, "reasons");
    if (!reasons.empty()) {
        h += "<p>Why:</p><ol id=\"reasons\">";
        std::size_t n = 0;
        for (const auto &r : reasons) {
            if (n++ == b.reasons) break;
            h += "<li>" + html_excerpt(value_text(r), b.string_excerpt) + "</li>";
        }
        h += "</ol>";
    }
    h += "</header>\n<input id=\"filter\" type=\"search\" hidden placeholder=\"Filter arms\" "
         "aria-label=\"Filter\">\n<h2>The qualification</h2><table class=\"kv\">";
    const auto row = [&](std::string_view key, const std::string &bytes) {
        h += "<tr><td class=\"k\">" + std::string{key} + "</td><td>" +
             html_excerpt(bytes, b.string_excerpt) + "</td></tr>\n";
    };
    row("status", field_text(q, "status"));
    row("started", field_text(q, "startedAt"));
    row("evaluation", field_text(q, "evaluation"));
    row("baseline", field_text(q, "baseline"));
    row("re-pass", field_text(q, "repass"));
    row("summary", field_text(q, "summary"));
    h += "</table>\n";
    const auto &score = field_list(q, "mutationScore");
    const double detected = decided.detected;
    const double total = decided.total;
    h += "<h2>Mutation score</h2>";
    if (field_number(score, "detected", -1) != detected ||
        field_number(score, "total", -1) != total) {
        h += "<p class=\"bad\">qualification.json claims " +
             html_excerpt(field_text(score, "detected"), 20) + " of " +
             html_excerpt(field_text(score, "total"), 20) +
             "; the plot shows what the arms' records say.</p>";
    }
    const auto plot = mutation_plot(detected, total);
    h += plot.empty() ? std::string{"<p class=\"note\">No mutated arm.</p>"} : plot;
    const auto &undetected = field_list(q, "undetected");
    if (!undetected.empty()) {
        h += "<p>Undetected (what the probes miss):</p><ul>";
        std::size_t n = 0;
        for (const auto &u : undetected) {
            if (n++ == b.list_items) break;
            h += "<li>" + html_excerpt(value_text(u), b.string_excerpt) + "</li>";
        }
        h += "</ul>";
    }
    h += "<h2>Arms</h2><table id=\"arms\"><tr><th>arm</th><th>mutation</th><th>run</th><th>"
         "verdict</th><th>detected</th><th>score's reasons on its records</th></tr>\n";
    std::size_t i = 0;
    static const nlohmann::json kNoArms = nlohmann::json::array();
    const auto &listed = field_list(q, "arms");
    const auto &arms = listed.is_array() ? listed : kNoArms;
    for (const auto &arm : arms) {
        if (i == b.list_items) break;
        const ArmDecision *decision = i < in.arms.size() ? &in.arms[i] : nullptr;
        ++i;
        std::string why;
        if (decision != nullptr) {
            std::size_t n = 0;
            for (const auto &r : decision->reasons) {
                if (n++ == 20) {
                    why += "… " + std::to_string(decision->reasons.size() - 20) + " more";
                    break;
                }
                why += html_excerpt(r, b.string_excerpt) + "<br>";
            }
        }
        h +=
            "<tr class=\"f\"><td>" + html_excerpt(field_text(arm, "conditionArm"), 50) +
            "</td><td>" + html_excerpt(field_text(arm, "mutation"), 300) + "</td><td><code>" +
            html_excerpt(field_text(arm, "runId"), 200) + "</code></td><td>" +
            html_excerpt(decision != nullptr ? decision->verdict : field_text(arm, "verdict"), 50) +
            "</td><td>" + html_excerpt(field_text(arm, "detected"), 10) + "</td><td>" + why +
            "</td></tr>\n";
    }
    h += "</table>\n<footer class=\"note\"><p>Written by " + html_excerpt(in.generator, 100) +
         " from <code>" + html_excerpt(in.folder.string(), b.string_excerpt) +
         "</code>. Each arm's own report: <code>tea-evaluate report RUN_DIR</code> on its run "
         "folder.</p></footer>";
    return page("tea-evaluate qualification: " + field_text(q, "qualificationId") + " - " + verdict,
                h);
}

}  // namespace tea::report
