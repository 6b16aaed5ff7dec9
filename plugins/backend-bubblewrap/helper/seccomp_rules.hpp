// The rules of the confined target's seccomp filter, written for libseccomp.
// They are compiled to BPF at build time (seccomp_bpf_gen) and the helper loads
// that program: libseccomp never runs inside the sandbox. docs/confinement.md
// says why each system call is refused.
#pragma once

#include <seccomp.h>

#include <string>

namespace tea::helper {

// A filter context with every rule added, or nullptr on failure: the reason in *error as a
// negative errno, and in *failed_rule the rule that could not be added (a system call neither
// libseccomp nor the fallback table below knows fails the build rather than dropping the rule).
// The caller releases it with seccomp_release.
scmp_filter_ctx make_confinement_filter(int *error, std::string *failed_rule = nullptr);

// The filter compiled to BPF by libseccomp for the architecture this runs on:
// the program's bytes, or nothing with *error set (a negative errno) and *failed_rule naming
// the rule at fault when one was.
std::string compile_confinement_program(int *error, std::string *failed_rule = nullptr);

}  // namespace tea::helper
