// The report of a run: one self-contained HTML page from the run's records (run.json, manifest.json
// and the calls' output files), with score's verdict and reasons. It reads records that may be
// torn, altered or hostile and never throws on their content: what a record lacks is shown as
// missing. Nothing on the page loads anything (no network, no external script, style or font).
#pragma once

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tea::report {

// The bounds that keep a page's size independent of what the records hold.
struct Bounds {
    std::size_t output_excerpt = 1024;  // bytes of each call's stdout and stderr shown
    std::size_t string_excerpt = 2048;  // bytes of any one string from a record
    std::size_t findings_per_call = 2000;
    std::size_t calls_per_trial = 2000;
    std::size_t reasons = 500;
    std::size_t list_items = 500;  // of any other list (mounts, refusals, artifacts)
    std::size_t trials = 1000;
    // Past this size no more calls, paths or rows are added, and the page says where it stopped:
    // the bounds above multiply (trials x calls x paths), this one does not.
    std::size_t page_bytes = std::size_t{16} << 20U;
};

struct RunReportInput {
    std::filesystem::path run_dir;
    // Initialised through a constructor that may allocate, so the struct's own is not noexcept.
    nlohmann::json run = nlohmann::json::value_t::null;       // run.json, null when missing or torn
    nlohmann::json manifest = nlohmann::json::value_t::null;  // manifest.json, null likewise
    std::string verdict;                                      // score's: pass, fail, invalid
    std::vector<std::string> reasons;
    std::string generator;  // "tea-evaluate 0.1.0"
    Bounds bounds;
};

std::string run_report(const RunReportInput &input);

// A qualification's page (qualification.json): the verdict, the mutation score and its plot, and
// each arm with score's decision on its records.
struct ArmDecision {
    std::string verdict;
    std::vector<std::string> reasons;
};
struct QualificationReportInput {
    std::filesystem::path folder;
    nlohmann::json qualification = nlohmann::json::value_t::null;  // null when missing or torn
    std::vector<ArmDecision> arms;  // one per qualification["arms"] item, in order
    std::string generator;
    Bounds bounds;
};

std::string qualification_report(const QualificationReportInput &input);

}  // namespace tea::report
