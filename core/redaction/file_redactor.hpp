// Redacting a file the run wrote (a record, a captured output, an artifact copied out) in place:
// the file is read through a StreamRedactor into a new file beside it, which replaces it by a
// rename once it is complete and synced, so a reader sees the whole old file or the whole
// redacted one, and a run killed half way leaves the old one whole. Memory does not depend on
// the file's size.
//
// Only a regular file is rewritten, and never through a link at its last component. The new file
// takes the old one's permission bits (and, as root, its owner). A file in which nothing is found
// is left as it was: no rename, same inode, same times.
#pragma once

#include <cstdint>
#include <filesystem>

#include "redaction/secret_matcher.hpp"

namespace tea::redaction {

// Returns the number of markers written (0: the file was left as it was). Throws tea::Error
// (exit 125) naming the path when the file cannot be read, written or replaced; the file is then
// left as it was and no temporary file stays.
// `cut`: the file is a capped copy whose end may lie inside a secret; the start of a secret it ends
// with is replaced too (StreamRedactor::finish_cut).
std::uint64_t redact_file(const std::filesystem::path &path, const SecretMatcher &matcher,
                          bool cut = false);

}  // namespace tea::redaction
