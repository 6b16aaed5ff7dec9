// What the probes of a service entry (toolServer, http) share: how a field reports its problem,
// and the request's timeout.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

namespace tea::evaluation {

// Where a problem goes: the field ("params.name") and the sentence.
using ProbeProblem = std::function<void(const std::string &field, const std::string &message)>;

// "timeoutMs": an integer from 1 to the entry's maxElapsedMs (`max_elapsed_ms`, 0: not known);
// nullopt, with the problem reported, otherwise.
std::optional<std::int64_t> read_probe_timeout(const nlohmann::json &v, std::int64_t max_elapsed_ms,
                                               const ProbeProblem &report);

}  // namespace tea::evaluation
