// Refusals of a path the confinement is built from, each naming the path and the way out.
#pragma once

#include <string>

namespace tea::bwrap {

// A quote, a backslash or a control character in a path the confinement is built from is
// refused, so no layer ever has to quote or escape it; so is a relative path. `what` names the
// path in the sentence ("workspace"). Throws tea::sdk::Unavailable.
void check_path(const std::string &path, const std::string &what);

// A path a mount protects must be the directory or file itself: a link, or a path through one,
// could be swapped between this check and bwrap's mount, leaving the real one writable. Throws
// tea::sdk::Unavailable.
void check_protected_path(const std::string &path);

}  // namespace tea::bwrap
