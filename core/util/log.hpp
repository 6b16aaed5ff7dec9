// The runtime's log: spdlog on stderr, so stdout stays free for --json output.
#pragma once

#include <spdlog/spdlog.h>

namespace tea::log {

// verbosity: -1 quiet (errors only), 0 normal (warnings), 1 info, 2 debug.
void init(int verbosity);

}  // namespace tea::log
