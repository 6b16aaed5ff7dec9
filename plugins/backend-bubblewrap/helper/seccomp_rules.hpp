// The rules of the confined target's seccomp filter, written for libseccomp.
// They are compiled to BPF at build time (seccomp_bpf_gen) and the helper loads
// that program: libseccomp never runs inside the sandbox. docs/confinement.md
// says why each system call is refused.
#pragma once

#include <seccomp.h>

#include <string>

namespace tea::helper {

// A filter context with every rule added, or nullptr on failure (the reason
// in *error as a negative errno). The caller releases it with seccomp_release.
scmp_filter_ctx make_confinement_filter(int *error);

// The filter compiled to BPF by libseccomp for the architecture this runs on:
// the program's bytes, or nothing with *error set (a negative errno).
std::string compile_confinement_program(int *error);

}  // namespace tea::helper
