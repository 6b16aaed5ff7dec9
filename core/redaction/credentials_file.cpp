#include "redaction/credentials_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "util/error.hpp"

namespace tea::redaction {

namespace {

std::string errno_message(int error_number) {
    return std::generic_category().message(error_number);
}

const char *file_kind(mode_t mode) {
    if (S_ISFIFO(mode)) return "a fifo";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

Error refused(const std::string &name, const std::string &finding) {
    return host_error("the credentials file " + name + " " + finding +
                      ", not a login file (a regular file of at most " +
                      std::to_string(kMaxCredentialsFileBytes / 1024) +
                      " KiB): the secrets to redact cannot be read from it");
}

}  // namespace

UniqueFd open_credentials_file(const std::filesystem::path &path) {
    // O_NOFOLLOW: a link planted in place of the file would have the runtime read, and treat as
    // the login, whatever it points to. O_NONBLOCK: a fifo there would block the run forever.
    UniqueFd fd{::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
    if (!fd) {
        const int e = errno;
        if (e == ENOENT) return fd;
        throw refused(path.string(),
                      e == ELOOP ? "is a symbolic link" : "cannot be opened: " + errno_message(e));
    }
    return fd;
}

std::string read_credentials_file(int fd, const std::string &name) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        throw refused(name, "cannot be examined: " + errno_message(errno));
    }
    if (!S_ISREG(st.st_mode)) throw refused(name, std::string{"is "} + file_kind(st.st_mode));
    if (st.st_size > static_cast<off_t>(kMaxCredentialsFileBytes)) {
        throw refused(name, "holds " + std::to_string(st.st_size) + " bytes");
    }
    // Read from the start to one byte past the cap, whatever fstat said: the file may be
    // rewritten while it is read.
    std::string text(kMaxCredentialsFileBytes + 1, '\0');
    std::size_t have = 0;
    while (have < text.size()) {
        const ssize_t n =
            ::pread(fd, text.data() + have, text.size() - have, static_cast<off_t>(have));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw refused(name, "cannot be read: " + errno_message(errno));
        if (n == 0) break;
        have += static_cast<std::size_t>(n);
    }
    if (have > kMaxCredentialsFileBytes) {
        throw refused(name, "grew past " + std::to_string(kMaxCredentialsFileBytes) +
                                " bytes while it was read");
    }
    text.resize(have);
    return text;
}

}  // namespace tea::redaction
