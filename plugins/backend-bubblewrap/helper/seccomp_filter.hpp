// The system calls a confined target may not make (docs/confinement.md says why each).
#pragma once

namespace tea::helper {

// Loads the filter into the calling thread (inherited by everything it starts).
// Returns 0, or a negative errno.
int install_seccomp_filter();

}  // namespace tea::helper
