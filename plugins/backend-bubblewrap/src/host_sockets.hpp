// The host's path-based Unix sockets, each of which the sandbox masks with an
// empty file so a connect from inside answers ECONNREFUSED.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "identity.hpp"

namespace tea::bwrap {

struct HostSocket {
    std::string path;
    uid_t owner = 0;
    bool mandatory = false;  // root's, a system account's or the running user's
};

struct SocketScan {
    std::vector<HostSocket> sockets;  // reachable by the sandbox identity, mandatory first
    bool walk_complete = true;        // false: the walk stopped at max_entries
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
};

// Sockets bound on the host (/proc/net/unix) plus socket files found under
// the directories. A socket the sandbox identity cannot reach is left out: the
// target cannot reach it either.
SocketScan scan_host_sockets(const SocketScanOptions &options, const Identity &sandbox);

}  // namespace tea::bwrap
