#include "evaluation/probe_fields.hpp"

#include <limits>
#include <nlohmann/json.hpp>

namespace tea::evaluation {

std::optional<std::int64_t> read_probe_timeout(const nlohmann::json &v, std::int64_t max_elapsed_ms,
                                               const ProbeProblem &report) {
    const auto max = max_elapsed_ms > 0 ? max_elapsed_ms : std::numeric_limits<int>::max();
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) ||
        v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > max) {
        report("timeoutMs", "must be an integer from 1 to " + std::to_string(max) +
                                " (the entry's maxElapsedMs)");
        return std::nullopt;
    }
    return v.get<std::int64_t>();
}

}  // namespace tea::evaluation
