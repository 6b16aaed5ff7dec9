// Reading and writing inside a directory a target controlled: its workspace after a call.
//
// A target may leave links to the grading material or to credentials, fifos that block a reader,
// and files of any size. Every path here is resolved by the kernel beneath the directory with no
// link followed (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), only
// regular files are read, and what is copied is bounded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace tea::files {

// Whether rel is a plain relative path: not empty, not absolute, no "." or ".." component, no
// empty component.
bool plain_relative(const std::string &rel);

// Writes content to root/rel, making the missing directories (0755), replacing a regular file
// that is there. Throws tea::Error naming rel when a component is a link, a special file or
// anything else than a directory or regular file.
void write_beneath(const std::filesystem::path &root, const std::string &rel,
                   const std::string &content);

struct CopyResult {
    enum class Status { copied, truncated, missing, refused };
    Status status = Status::missing;
    std::uint64_t bytes = 0;  // bytes copied
    std::string reason;       // for refused: a link, a fifo, a directory...
};
const char *to_string(CopyResult::Status status);

// Copies root/rel to destination (created 0644, must not exist), at most max_bytes of it.
CopyResult copy_out_beneath(const std::filesystem::path &root, const std::string &rel,
                            const std::filesystem::path &destination, std::uint64_t max_bytes);

// The first max_bytes of root/rel, resolved as copy_out_beneath resolves it, from a regular file
// with no other name (a hard link would show a file from elsewhere); nullopt with *why set
// otherwise.
std::optional<std::string> read_head_beneath(const std::filesystem::path &root,
                                             const std::string &rel, std::size_t max_bytes,
                                             std::string *why);

// Writes a file so that a reader sees the old content or the new, never a torn one: a temp file
// in the same directory, fsync, rename over the destination, fsync of the directory.
// Throws tea::Error naming the path.
void write_atomically(const std::filesystem::path &path, const std::string &content);

}  // namespace tea::files
