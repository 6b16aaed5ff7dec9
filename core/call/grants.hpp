// What the judge needs of a call beside its observation: the call's grants (audit/judge.hpp), and
// where the host shows what the target saw (audit/host_resolution.hpp).
#pragma once

#include <filesystem>

#include "audit/host_resolution.hpp"
#include "audit/judge.hpp"
#include "exec/exec_plan.hpp"

namespace tea::call {

// What the call may reach without being listed.
audit::Grants call_grants(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                          const std::filesystem::path &private_root);

// Where the host shows what the target saw, for following what the observer could not place.
audit::HostView host_view(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                          const std::filesystem::path &private_root);

}  // namespace tea::call
