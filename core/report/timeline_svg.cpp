#include "report/timeline_svg.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>
#include <utility>

#include "report/html_text.hpp"
#include "report/page.hpp"

namespace tea::report {
namespace {

using nlohmann::json;

constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kColours{{
    {"ok", "#43a047"},
    {"non-zero exit", "#fb8c00"},
    {"listed", "#c62828"},
    {"infrastructure", "#6d4c41"},
    {"timed out", "#8e24aa"},
    {"not started", "#9e9e9e"},
}};

std::string_view colour(std::string_view outcome) {
    for (const auto &[name, value] : kColours) {
        if (name == outcome) return value;
    }
    return "#9e9e9e";
}

bool truthy(const json &call, std::string_view key) {
    if (!call.is_object()) return false;
    const auto it = call.find(key);
    return it != call.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

std::string call_outcome(const json &call) {
    if (!call.is_object()) return "not started";
    const auto started = call.find("targetStarted");
    if (started != call.end() && started->is_boolean() && !started->get<bool>()) {
        return "not started";
    }
    if (truthy(call, "infrastructureError")) return "infrastructure";
    if (truthy(call, "timedOut")) return "timed out";
    if (!field_list(call, "observedMounts").empty()) return "listed";
    return field_number(call, "status", 0) == 0 ? "ok" : "non-zero exit";
}

std::string calls_timeline(const json &run, std::size_t max_trials, std::size_t max_calls) {
    const auto &trials = field_list(run, "trials");
    if (!trials.is_array()) return {};
    double longest = 0;
    std::size_t rows = 0;
    for (const auto &trial : trials) {
        if (rows == max_trials) break;
        ++rows;
        double total = 0;
        std::size_t n = 0;
        for (const auto &call : field_list(trial, "calls")) {
            if (n++ == max_calls) break;
            total += std::max(0.0, field_number(call, "elapsedMs", 0));
        }
        longest = std::max(longest, total);
    }
    if (rows == 0 || longest <= 0) return {};
    constexpr double kLeft = 70;
    constexpr double kWidth = 1000;
    constexpr double kRow = 22;
    constexpr double kTop = 8;
    const double height = kTop + static_cast<double>(rows) * kRow + 34;
    const double scale = kWidth / longest;
    std::string out = "<svg role=\"img\" viewBox=\"0 0 " + decimal(kLeft + kWidth + 10) + " " +
                      decimal(height) +
                      "\" width=\"100%\"><title>Calls over time, one row per trial</title>\n";
    // However many trials and calls the records hold, the drawing stays a few MB at most; a run
    // past it is drawn in part, and the page's tables hold every call.
    constexpr std::size_t kMaxBars = 20000;
    std::size_t bars = 0;
    std::size_t row = 0;
    for (const auto &trial : trials) {
        if (row == rows) break;
        const double y = kTop + static_cast<double>(row) * kRow;
        out += "<text x=\"4\" y=\"" + decimal(y + 14) + "\">trial " +
               html_excerpt(field_text(trial, "index"), 12) + "</text>\n";
        double x = 0;
        std::size_t n = 0;
        for (const auto &call : field_list(trial, "calls")) {
            if (n++ == max_calls || bars++ == kMaxBars) break;
            const double ms = std::max(0.0, field_number(call, "elapsedMs", 0));
            const auto outcome = call_outcome(call);
            // At least half a unit wide, so that a call of no measurable time still shows.
            out += "<rect x=\"" + decimal(kLeft + x * scale) + "\" y=\"" + decimal(y + 3) +
                   "\" width=\"" + decimal(std::max(0.5, ms * scale - 0.5)) + "\" height=\"" +
                   decimal(kRow - 6) + "\" fill=\"" + std::string{colour(outcome)} + "\"><title>" +
                   html_excerpt(field_text(call, "probe"), 200) + " (" +
                   html_excerpt(field_text(call, "entry"), 200) + "): " + outcome + ", " +
                   decimal(ms) + " ms</title></rect>\n";
            x += ms;
        }
        ++row;
    }
    const double axis = kTop + static_cast<double>(rows) * kRow + 12;
    out += "<text x=\"" + decimal(kLeft) + "\" y=\"" + decimal(axis) + "\">0 ms</text>";
    out += "<text x=\"" + decimal(kLeft + kWidth) + "\" y=\"" + decimal(axis) +
           "\" text-anchor=\"end\">" + decimal(longest) + " ms</text>\n";
    double legend_x = kLeft;
    for (const auto &[name, value] : kColours) {
        out += "<rect x=\"" + decimal(legend_x) + "\" y=\"" + decimal(axis + 8) +
               "\" width=\"10\" height=\"10\" fill=\"" + std::string{value} + "\"/><text x=\"" +
               decimal(legend_x + 14) + "\" y=\"" + decimal(axis + 17) + "\">" + std::string{name} +
               "</text>";
        legend_x += 120;
    }
    out += "\n</svg>";
    return out;
}

}  // namespace tea::report
