// The system calls a confined target may not make (docs/confinement.md says why each).
#pragma once

namespace tea::helper {

// Loads the filter into the calling thread (inherited by everything it starts),
// which must have set no_new_privs: the BPF program seccomp_bpf_gen compiled
// from seccomp_rules.cpp at build time. Returns 0, or a negative errno.
int install_seccomp_filter();

}  // namespace tea::helper
