#include "host_sockets.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace tea::bwrap {
namespace {

namespace fs = std::filesystem;

void from_proc(std::set<std::string> &paths) {
    std::ifstream in{"/proc/net/unix"};
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
        // Num RefCount Protocol Flags Type St Inode [Path]; the path may hold spaces.
        std::istringstream fields{line};
        std::string skip;
        for (int i = 0; i < 7 && fields >> skip; ++i) {
        }
        std::string path;
        std::getline(fields >> std::ws, path);
        if (!path.empty() && path[0] == '/') {  // '@' marks an abstract socket: no file
            paths.insert(path);
        }
    }
}

void walk(const fs::path &dir, std::size_t depth, const SocketScanOptions &options,
          std::size_t &budget, std::set<std::string> &paths) {
    std::error_code ec;
    for (fs::directory_iterator it{dir, fs::directory_options::skip_permission_denied, ec}, end;
         !ec && it != end && budget > 0; it.increment(ec)) {
        --budget;
        const auto status = it->symlink_status(ec);
        if (ec) {
            continue;
        }
        if (fs::is_socket(status)) {
            paths.insert(it->path().string());
        } else if (fs::is_directory(status) && depth + 1 < options.max_depth) {
            walk(it->path(), depth + 1, options, budget, paths);
        }
    }
}

}  // namespace

SocketScan scan_host_sockets(const SocketScanOptions &options, const Identity &sandbox) {
    std::set<std::string> paths;
    from_proc(paths);
    std::size_t budget = options.max_entries;
    for (const auto &dir : options.directories) {
        walk(dir, 0, options, budget, paths);
    }
    SocketScan scan;
    const uid_t self = ::getuid();
    for (const auto &p : paths) {
        struct stat st {};
        // Gone, or behind a directory we cannot search: nobody in the sandbox reaches it.
        if (::lstat(p.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) ||
            unreachable_ancestor(fs::path{p}.parent_path(), sandbox)) {
            continue;
        }
        const bool mandatory =
            st.st_uid < options.system_uid_limit || st.st_uid == self || st.st_uid == sandbox.uid;
        scan.sockets.push_back(HostSocket{p, st.st_uid, mandatory});
    }
    std::stable_partition(scan.sockets.begin(), scan.sockets.end(),
                          [](const HostSocket &s) { return s.mandatory; });
    return scan;
}

}  // namespace tea::bwrap
