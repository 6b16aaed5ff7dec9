// The range of the Slurm coordinator's lease, [executor] slurm_lease_s: the config refuses a value
// outside it, and a task takes a lease file that states one outside it for no lease at all.
#pragma once

#include <cstdint>

namespace tea::config {

inline constexpr std::int64_t kShortestSlurmLeaseS = 10;
inline constexpr std::int64_t kLongestSlurmLeaseS = 86400;

}  // namespace tea::config
