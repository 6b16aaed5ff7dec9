// Whether a program of the evaluation (a registry entry's target, the evaluator's command) is a
// file the kernel will execute: its execute bit set, as git records it (the owner's), and a
// format execve knows by its first bytes, an ELF header or an interpreter line (#!).
//
// A file that fails either starts no call: every call of it ends with 126, and a run's records
// would blame the target for the author's mistake. A script without "#!" is not run through sh
// either: execve refuses it (ENOEXEC), and so does every backend (docs/cli.md, exit codes).
// Formats the host registered with binfmt_misc are refused too: an evaluation must not depend
// on how one host was set up.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace tea::evaluation {

// Why the regular file at `file` cannot be executed, as a phrase that follows its name ("is not
// executable (mode 0644): chmod +x it"); std::nullopt when it can. A file whose first bytes
// cannot be read is refused with the reason: the check fails closed.
std::optional<std::string> why_not_executable(const std::filesystem::path &file);

}  // namespace tea::evaluation
