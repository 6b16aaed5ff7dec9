// Reading a login's credentials file for its secrets: bounded, never through a link, never
// blocking.
//
// The file is the user's (Claude Code's .credentials.json, Codex's auth.json), read once before
// a run and again as each call settles, while the client on the host may be rewriting it. A file
// that is not what a login file is (a link, a fifo, a device, a directory, more than
// kMaxCredentialsFileBytes) is refused rather than read: the run cannot know what to redact.
// Every refusal is a tea::Error with exit 12 whose sentence names the file and what it found.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "util/fd.hpp"

namespace tea::redaction {

// Far above any login file (a few hundred bytes for Claude Code, a few KiB for Codex), and small
// enough that every string a run has kept stays cheap to match.
inline constexpr std::size_t kMaxCredentialsFileBytes = 64 * 1024;

// Opens `path` for reading with O_NOFOLLOW | O_NONBLOCK: a link at its last component is refused,
// and a fifo opens at once (to be refused by read_credentials_file) instead of waiting for a
// writer. An absent file gives an invalid descriptor: whether that is an error is the caller's.
UniqueFd open_credentials_file(const std::filesystem::path &path);

// The whole content of the open file `fd`, which must be a regular file of at most
// kMaxCredentialsFileBytes, also while it is read (a file that grows past the cap meanwhile is
// refused). `name` names the file in errors.
std::string read_credentials_file(int fd, const std::string &name);

}  // namespace tea::redaction
