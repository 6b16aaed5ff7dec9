// The host's path-based Unix sockets, each of which the sandbox masks with an
// empty file so a connect from inside answers ECONNREFUSED.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "identity.hpp"

namespace tea::bwrap {

struct HostSocket {
    std::string path;  // where the file lies, every link on the way followed
    uid_t owner = 0;
    bool mandatory = false;  // root's, a system account's or the running user's
};

struct SocketScan {
    std::vector<HostSocket> sockets;  // reachable by the sandbox identity, mandatory first
    // Sockets bound by a relative name that no holder's working directory places (path: the
    // name as bound; owner: a holder's uid). A socket with no holder the runtime can read is not
    // listed at all: see docs/confinement.md.
    std::vector<HostSocket> unlocated;
    bool walk_complete = true;           // false: the walk stopped at max_entries
    std::size_t directories_read = 0;    // listed with getdents64
    std::size_t directories_reused = 0;  // taken from the cache, unchanged since
};

struct SocketScanOptions {
    std::vector<std::filesystem::path> directories;  // walked for socket files
    std::size_t max_depth = 3;
    std::size_t max_entries = 50000;  // bound on the walk
    // Directories not walked (matched by device and inode, so any name for them counts): the
    // call's own and those the sandbox covers, whose sockets are never masked. The call's
    // workspace is the target's to fill; walked, its entries would use up the bound.
    std::vector<std::filesystem::path> skip;
    uid_t system_uid_limit = 1000;  // below: a system account
    // Where the walk keeps what it found in each directory between calls (empty: nowhere). A
    // directory whose device, inode, change time and modification time are those kept is not
    // listed again: a name can only be added to a directory by changing both times, and no user
    // can set a change time. Kept only for a directory on a file system whose times the kernel
    // itself maintains (ext4, tmpfs, xfs, btrfs: not a FUSE or network one, whose server chooses
    // them), and left alone for `settle` before the walk (two changes within one clock tick can
    // share a time). The file must be the user's own, unreachable to every target (the private
    // root); one that is not, or does not parse, is ignored and the walk reads everything.
    std::filesystem::path cache_file;
    std::chrono::nanoseconds settle = std::chrono::seconds{2};
};

// Sockets bound on the host (/proc/net/unix) plus socket files found under
// the directories. A socket the sandbox identity cannot reach is left out: the
// target cannot reach it either.
SocketScan scan_host_sockets(const SocketScanOptions &options, const Identity &sandbox);

}  // namespace tea::bwrap
