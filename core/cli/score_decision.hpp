// score's decision on a run from its records alone (score_command.cpp), which qualify takes for
// each of its arms.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace tea::cli {

struct Decision {
    std::vector<std::string> invalid;  // reasons that make the run Invalid
    std::vector<std::string> fail;     // the evaluator's reasons for a failed trial
    bool any_fail = false;
};

// Reads run_dir's records (run.json into *run_out, manifest.json into *manifest_out when given)
// and decides; a field of the wrong type throws nlohmann::json::exception.
Decision decide(const std::filesystem::path &run_dir, nlohmann::json *run_out,
                nlohmann::json *manifest_out = nullptr);

// A record of the run as a JSON object, or null with *why set: absent, larger than any record the
// runtime writes, torn.
nlohmann::json read_record(const std::filesystem::path &path, std::string *why);

// score's verdict on a run: "invalid", "fail" or "pass", and the reasons that decide it (the
// invalid ones, else the evaluator's). A record whose field has the wrong type is Invalid.
struct Verdict {
    std::string verdict;
    std::vector<std::string> reasons;
};
Verdict verdict_of(const std::filesystem::path &run_dir, nlohmann::json *run_out,
                   nlohmann::json *manifest_out = nullptr);

// The run a command's RUN_DIR argument names: a run's directory, or an evaluation folder or its
// runs/ for the latest run (said on stderr). Throws usage_error naming `command` when there is
// none.
std::filesystem::path named_run_dir(const std::filesystem::path &argument,
                                    std::string_view command);

}  // namespace tea::cli
