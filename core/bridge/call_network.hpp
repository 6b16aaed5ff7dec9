// The process whose network the listening check reads (listening_check.hpp): under a confining
// backend the service listens in the call's own network namespace, which the plan's first process
// (bwrap, or the observer in front of it) may not share.
#pragma once

#include <sys/types.h>

#include <optional>

namespace tea::bridge {

// The shallowest process among `root` and its descendants whose network namespace is not this
// process's: one inside the call's network. nullopt when none is (yet), or `root` is gone.
std::optional<pid_t> process_in_call_network(pid_t root);

}  // namespace tea::bridge
