// Walking a tree a target may have written (its workspace, its home) or that must not change (the
// evaluation folder), by descriptor.
//
// Every entry is reached with openat/fstatat from its parent's descriptor, never by a path from
// the root, so a directory renamed or replaced by a link during the walk cannot lead it elsewhere.
// No link is followed: a link is reported with its text. No fifo, socket or device is opened: a
// fifo would block its reader, a device could be a terminal or a disk. The walk is bounded in
// depth and in entries; what it could not reach is named, so a caller can refuse rather than take
// a partial walk for a whole one.
//
// Thread-safety: none shared; each call uses its own descriptors.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace tea::files {

enum class TreeEntryType { directory, regular, link, other };
const char *to_string(TreeEntryType type);

struct TreeEntry {
    std::string path;  // relative to the root, '/'-separated; "." for the root itself
    TreeEntryType type = TreeEntryType::other;
    std::uint32_t mode = 0;  // permission, set-id and sticky bits (st_mode & 07777)
    uid_t uid = 0;
    gid_t gid = 0;
    std::uint64_t size = 0;  // st_size of a regular file or a link; 0 otherwise
    std::string link_text;   // a link's text, as readlink gives it
    // A regular file only: a descriptor open for reading, valid during the visitor's call. The
    // walk checked that it is the file it stat'ed (same device and inode), so a file swapped for
    // a fifo between the two is never read.
    int fd = -1;
};

struct TreeLimits {
    std::size_t max_entries = 1'000'000;
    std::size_t max_depth = 256;
    // Paths relative to the root (as TreeEntry::path spells them) neither visited nor entered:
    // a subtree the caller itself writes, such as an evaluation folder's runs/.
    std::set<std::string> excluded;
};

struct TreeWalk {
    std::size_t entries = 0;  // visited, the root included
    // What the walk could not reach, each "path: reason" (an unreadable directory, an entry past
    // a limit). Empty: the walk saw the whole tree.
    std::vector<std::string> unreached;
    [[nodiscard]] bool complete() const { return unreached.empty(); }
};

// Calls `visit` for the root (".") and every entry beneath it, a directory before what it holds,
// the names of a directory in byte order, so two walks of one unchanged tree visit the same
// sequence. Throws tea::Error naming the root when it cannot be opened as a directory (a link
// at the root is refused as well: the caller names the tree it means).
TreeWalk walk_tree(const std::filesystem::path &root, const TreeLimits &limits,
                   const std::function<void(const TreeEntry &)> &visit);

}  // namespace tea::files
