// The host's Unix sockets the target could connect to, each masked in the view with an empty file
// (a connect answers ECONNREFUSED), and those left reachable for lack of room reported.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "settings.hpp"
#include "target_call.hpp"

namespace tea::bwrap {

// Appends a mask for each reachable host socket to `view` (bwrap's words) and returns the plan's
// report: the sandbox identity, the masks made, the room for them and socketsLeftReachable. Throws
// tea::sdk::Unavailable when a socket that must be masked cannot be.
nlohmann::json mask_sockets(const Settings &settings, const TargetCall &call,
                            std::vector<std::string> &view);

}  // namespace tea::bwrap
