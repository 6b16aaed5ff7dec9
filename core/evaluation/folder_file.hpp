// One file of the evaluation folder read whole at load (a corpus file, a conversation's brief):
// opened without following a link, so one planted in its place reads as an error rather than as
// the file it points to, without blocking on a fifo planted there, and never past a size cap.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace tea::evaluation {

// Fills `content` with the regular file at `path`; returns why it could not, as a phrase that
// follows the file's name ("is not a regular file", "grew over 16 MiB"). `cap_words` names
// `max_bytes` in that phrase.
std::optional<std::string> read_folder_file(const std::filesystem::path &path,
                                            std::size_t max_bytes, const std::string &cap_words,
                                            std::string &content);

}  // namespace tea::evaluation
