#include "evaluation/preflight_legs.hpp"

namespace tea::evaluation {

std::size_t copy_workspace(const stdfs::path &from, const stdfs::path &to) {
    std::size_t skipped = 0;
    stdfs::create_directory(to);
    stdfs::permissions(to, stdfs::status(from).permissions());
    for (auto it = stdfs::recursive_directory_iterator{from}; it != stdfs::end(it); ++it) {
        const auto rel = it->path().lexically_relative(from);
        const auto dest = to / rel;
        const auto status = it->symlink_status();
        if (stdfs::is_symlink(status)) {
            stdfs::copy_symlink(it->path(), dest);
        } else if (stdfs::is_directory(status)) {
            stdfs::create_directory(dest);
            stdfs::permissions(dest, status.permissions());
        } else if (stdfs::is_regular_file(status)) {
            stdfs::copy_file(it->path(), dest);
        } else {
            ++skipped;  // fifos, sockets, devices: nothing a pristine checkout holds
        }
    }
    return skipped;
}

}  // namespace tea::evaluation
