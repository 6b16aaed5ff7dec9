// A target's plan: bwrap building the view the call's launch spec asks for, started one of three
// ways.
//  - Audited (the spec is observed, ABI 1.4): bwrap builds the view untraced and the helper holds
//    it as the sandbox's pid 1 (the plan's holder); the plan's own process, the helper on the
//    host, joins it and starts the target, so the observer follows the target and not bwrap's
//    set-up.
//  - By the view builder: bwrap starts the view builder, which builds the view inside the
//    namespaces bwrap made and becomes the target. A staged spec (ABI 1.5) gets this process with
//    its view deferred.
//  - Through a launcher: the helper (after the egress shim, for a call with a route out) starts
//    the target, when no path of it can be named beforehand or the environment needs the helper.
#pragma once

#include <tea/documents.hpp>

#include "settings.hpp"
#include "target_call.hpp"

namespace tea::bwrap {

// Throws tea::sdk::Unavailable or tea::sdk::Invalid when the view cannot be built as asked.
documents::ExecPlan target_plan(const Settings &settings, const TargetCall &call);

}  // namespace tea::bwrap
