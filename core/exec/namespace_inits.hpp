// Where the end of a confined call is sent: the first process of each pid namespace the call's
// processes made, which passes it on to every process of its namespace (tea/namespace_init.hpp).
// The call's process group holds only the confinement's own processes there (bwrap, the
// observer), which a SIGTERM would end, and the target with them, before its grace.
#pragma once

#include <sys/types.h>

#include <vector>

namespace tea::exec::detail {

// Sends `signal_number` to the first process of each pid namespace below the processes `roots`
// (ids of the runtime's namespace; -1 is skipped), found through /proc and signalled through the
// descriptor of its /proc directory, so a reused id is never signalled. Only processes of the
// runtime's own namespace are looked beneath, at most a few dozen: a namespace's init is where
// the walk stops. Returns how many were signalled.
int signal_namespace_inits(const std::vector<pid_t> &roots, int signal_number);

}  // namespace tea::exec::detail
