// Git's delta format, in which a pack stores an object as the changes from another (its base):
// the base's size and the result's size as varints, then instructions that either copy a range
// of the base or insert bytes carried in the delta itself.
#pragma once

#include <optional>
#include <span>
#include <vector>

namespace tea::git {

using Bytes = std::vector<unsigned char>;

// The object delta makes of base; nullopt when the delta is malformed, names another base size,
// copies from outside the base or makes other than the size it announces. The memory taken
// follows what the instructions make, never the size the delta announces.
std::optional<Bytes> apply_delta(std::span<const unsigned char> base,
                                 std::span<const unsigned char> delta);

}  // namespace tea::git
