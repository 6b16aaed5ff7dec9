// What a historical probe's "revision" may be written as: a commit id (abbreviated or full), or a
// branch or tag name, either followed by ~N and ^N steps. The rest of git's revision language
// (HEAD:path, :/text, @{...}, ranges) names blobs, searches or reflogs, not a commit to check out.
#pragma once

#include <optional>
#include <string>

namespace tea::evaluation {

// Why `revision` is not one, or nothing when it is.
std::optional<std::string> malformed_revision(const std::string &revision);

}  // namespace tea::evaluation
