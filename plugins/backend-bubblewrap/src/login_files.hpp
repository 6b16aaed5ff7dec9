// (ABI 1.8) A login's files shown read-only in the target's private home: each one at
// <home>/<homePath>, with the content the host read for this call, from a sealed copy the plan
// hands bwrap or the view builder (--ro-bind-data). The user's own file is never opened here: as
// root the target runs as an account that could not read it, and what the target reads must be
// exactly what the runtime redacts.
#pragma once

#include <cstddef>
#include <string>
#include <tea/documents.hpp>
#include <vector>

#include "target_call.hpp"

namespace tea::bwrap {

// More would be no login anyone ships; the bound keeps the plan's descriptors few.
inline constexpr std::size_t kMaxLoginFiles = 16;

// Refuses a spec whose login files cannot be shown as asked: too many, a path the confinement
// refuses to carry, or (in a home made on the host, which lasts across a trial's calls) a place
// that an earlier call turned into a link or into something that is not a directory or a file.
// Throws tea::sdk::Invalid or tea::sdk::Unavailable naming the path.
void check_login_files(const TargetCall &call);

// Where each login file is shown, in bwrap's words: after the home's own mount.
std::vector<std::string> login_file_options(const TargetCall &call);

// The plan's descriptors that hold each file's content, for bwrap to read.
std::vector<documents::PlanFile> login_plan_files(const TargetCall &call);

}  // namespace tea::bwrap
