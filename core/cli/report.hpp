// What the commands print of a call and of an evaluation, shared by exec, preflight, run and check:
// every path and every field a plugin or a target chose escaped, so that nothing a hostile name
// holds can forge lines of the report.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/observation.hpp"
#include "evaluation/evaluation.hpp"

namespace tea::cli {

// A path as one line of a human list: control bytes and backslashes escaped (\xNN), so a
// hostile file name cannot forge lines of the report.
std::string printable(const std::string &path);

// The egress route's refusals of a call (its records), one escaped line each, on stderr (nothing
// when none).
void print_egress_refusals(const nlohmann::json &records);

// The audit's list in human form, on stderr: what was listed, or why nothing can be said.
void print_audit(const audit::AuditResult &audit);

// One escaped line per problem of an evaluation, on stderr.
void print_problems(const std::vector<evaluation::Problem> &problems);

// The last lines of a file of the run's records (an evaluator's stderr), on stderr under a line
// naming the file: at most max_lines, read from its last 8 KiB, each escaped as a path is and cut
// at 500 bytes.
void print_last_lines(const std::filesystem::path &file, std::size_t max_lines);

}  // namespace tea::cli
