// Whether this host lets bubblewrap confine: a trivial process confined with every call's
// namespaces, and once more as the view builder gets them. A pass is remembered (tea/stamp.hpp)
// until the next boot or a change of what it depends on.
#pragma once

#include "identity.hpp"
#include "settings.hpp"

namespace tea::bwrap {

// Throws tea::sdk::Unavailable with the reason and the way out.
void probe_confinement(const Settings &settings, const Identity &identity);

}  // namespace tea::bwrap
