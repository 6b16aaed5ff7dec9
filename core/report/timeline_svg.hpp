// A run's calls drawn as a timeline: one bar per call, trials one row each, coloured by how the
// call ended. Calls run one after another within a trial, so each bar starts where the one before
// it ended; the time between calls (set-up, grading) is not drawn.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace tea::report {

// Inline SVG for run.json's trials (at most max_trials rows and max_calls bars a row); "" when no
// trial holds a call.
std::string calls_timeline(const nlohmann::json &run, std::size_t max_trials,
                           std::size_t max_calls);

// How a call ended, as the page's words and colours: "ok", "non-zero exit", "listed" (the audit
// listed a path), "infrastructure", "timed out", "not started".
std::string call_outcome(const nlohmann::json &call);

}  // namespace tea::report
