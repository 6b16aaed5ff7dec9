// The evaluator's view (a launch spec with role "grader"): the host as it is (its network, its
// identity, every place the uid may write), with only the read-only paths (the evaluation folder,
// the git directory) protected, so the grader cannot change what it judges. A spec with an egress
// route (an agent of the evaluation layer that lists the hosts it may reach) loses the host's
// network: a namespace of its own, left over IP only through the route's shim (the host's Unix
// sockets and AF_VSOCK stay reachable: this view masks no socket and loads no filter).
#pragma once

#include <tea/documents.hpp>

#include "settings.hpp"

namespace tea::bwrap {

// Throws tea::sdk::Invalid for a spec that asks for what this view does not keep (a withheld
// path, something shown over the workspace, a login's files), tea::sdk::Unavailable for a read-only
// path that cannot be protected.
documents::ExecPlan grader_plan(const Settings &settings, const documents::LaunchSpec &spec);

}  // namespace tea::bwrap
