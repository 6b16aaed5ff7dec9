// A launch spec in, the sandbox-exec plan out: every refusal of a spec Seatbelt cannot carry, the
// target's environment, and the command line. Pure, like the profile it writes.
#pragma once

#include <tea/documents.hpp>

#include "settings.hpp"

namespace tea::seatbelt {

// Throws tea::sdk::Unavailable (exit 12) or tea::sdk::Invalid (exit 2) naming the path or field.
documents::ExecPlan seatbelt_plan(const Settings &settings, const documents::LaunchSpec &spec);

}  // namespace tea::seatbelt
