// Whether this host can confine through Seatbelt: macOS, a sandbox-exec that applies a trivial
// profile, and a runtime that is not itself inside a Seatbelt sandbox.
#pragma once

#include <string>

namespace tea::seatbelt {

// The sentence `plugins` shows on a host that is not macOS.
inline constexpr const char *kMacOsOnly =
    "macOS only: Seatbelt and sandbox-exec exist only there (use the bubblewrap backend on Linux)";

// Runs `sandbox_exec -p '(version 1)(allow default)' <true>` and reads its answer. Throws
// tea::sdk::Unavailable naming the reason and the way out: no such program, a refusal to apply
// the profile because the runtime already runs inside a Seatbelt sandbox (sandbox-exec cannot
// apply a profile there), or any other failure with what the program said. POSIX only, so the
// decision is tested on Linux against a stand-in program.
void check_sandbox_exec(const std::string &sandbox_exec, const std::string &true_program);

}  // namespace tea::seatbelt
