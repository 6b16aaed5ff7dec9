// score's decision on a run from its records alone (score_command.cpp), which qualify takes for
// each of its arms.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tea::cli {

struct Decision {
    std::vector<std::string> invalid;  // reasons that make the run Invalid
    std::vector<std::string> fail;     // the evaluator's reasons for a failed trial
    bool any_fail = false;
};

// Reads run_dir's records (run.json into *run_out) and decides; a field of the wrong type throws
// nlohmann::json::exception.
Decision decide(const std::filesystem::path &run_dir, nlohmann::json *run_out);

}  // namespace tea::cli
