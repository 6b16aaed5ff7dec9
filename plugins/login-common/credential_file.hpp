// What a login adapter finds at the path of a credentials file, without opening it: the host
// opens and reads the file itself when it links it and reads it for redaction.
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <tea/plugin.hpp>

namespace tea::login {

// A path joined under a directory taken from the environment or the home; "" when there is none.
inline std::string under(const std::string &dir, const char *name) {
    if (dir.empty()) {
        return {};
    }
    return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Whether `path` is a credentials file the host may link: true for a regular file, false when
// nothing is there. Anything else is refused (tea::sdk::Invalid), naming the path and why.
inline bool credentials_file_present(const std::string &path) {
    struct stat st {};
    if (path.empty() || ::lstat(path.c_str(), &st) != 0) {
        if (path.empty() || errno == ENOENT || errno == ENOTDIR) {
            return false;
        }
        throw tea::sdk::Invalid("cannot examine the login file " + path + ": " +
                                std::strerror(errno));
    }
    // A link could name any file of the host, and the private home would hand that file to
    // every target of the run; a fifo or device would block or never end the host's read.
    if (S_ISLNK(st.st_mode)) {
        throw tea::sdk::Invalid("the login file " + path +
                                " is a symbolic link; only a regular file is linked into the "
                                "private home (point the variable that locates it at the "
                                "folder that holds the file itself)");
    }
    if (!S_ISREG(st.st_mode)) {
        throw tea::sdk::Invalid("the login file " + path + " is not a regular file");
    }
    return true;
}

}  // namespace tea::login
