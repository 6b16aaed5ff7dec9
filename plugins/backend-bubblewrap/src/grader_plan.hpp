// The evaluator's view (a launch spec with role "grader"): the host as it is (its network, its
// identity, every place the uid may write), with only the read-only paths (the evaluation folder,
// the git directory) protected, so the grader cannot change what it judges.
#pragma once

#include <tea/documents.hpp>

#include "settings.hpp"

namespace tea::bwrap {

// Throws tea::sdk::Invalid for a spec that asks for what this view does not keep (a withheld
// path, a route out, something shown over the workspace), tea::sdk::Unavailable for a read-only
// path that cannot be protected.
documents::ExecPlan grader_plan(const Settings &settings, const documents::LaunchSpec &spec);

}  // namespace tea::bwrap
