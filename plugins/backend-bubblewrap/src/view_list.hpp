// A target's view after the root and /proc, in bwrap's words (which the view builder takes too):
// /proc/sys and /sys, the call's own temp directories (the runtime's prefix and the system paths
// in them bound back), the private root's cover with the call's home (and a workspace of its run)
// bound back, the workspace, the read-only grants, the withheld paths' covers, what is shown over
// the workspace, the host sockets' masks, and the working directory. /dev comes first, from the
// plan (target_plan.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "settings.hpp"
#include "target_call.hpp"

namespace tea::bwrap {

struct TargetView {
    std::vector<std::string> options;
    nlohmann::json report = nlohmann::json::object();  // the plan's report (socket_masks.hpp)
};

// Throws tea::sdk::Unavailable or tea::sdk::Invalid naming the path that cannot be shown as the
// spec asks.
TargetView target_view(const Settings &settings, const TargetCall &call);

}  // namespace tea::bwrap
