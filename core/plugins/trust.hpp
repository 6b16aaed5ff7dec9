// Who may have written the files a root runtime loads code from (docs/plugin-authoring.md,
// "Who may install a plugin"). A plugin runs inside tea-evaluate with all of its privileges, so
// as root a manifest and a library are used only when no other user could have chosen them.
#pragma once

#include <sys/types.h>

#include <filesystem>

#include "util/fd.hpp"

namespace tea::plugins {

struct TrustPolicy {
    // Whether files must be the trusted owner's; off, a file is opened as it is.
    bool required = false;
    uid_t owner = 0;

    // Required when the effective uid is 0: then the ownership of every file decides.
    static TrustPolicy for_this_process();
};

// Opens the regular file `path` for reading. Under a required policy, it walks the path one
// name at a time from "/" (following links itself) and refuses, with std::runtime_error naming
// the path it stopped at and why, when the file or any directory or link on the way:
//  - is owned by anyone but the policy's owner, or
//  - is writable by its group or by others (a directory only when it is not sticky), or
//  - lies on a FUSE file system, whose owners and modes are whatever its server reports.
// Nobody but the owner can then change which file the path names, nor its content, so a later
// open of the same path (dlopen's) reaches the same file.
UniqueFd open_trusted(const std::filesystem::path &path, const TrustPolicy &policy);

}  // namespace tea::plugins
