#include "evaluation/folder_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "util/fd.hpp"

namespace tea::evaluation {

std::optional<std::string> read_folder_file(const std::filesystem::path &path,
                                            std::size_t max_bytes, const std::string &cap_words,
                                            std::string &content) {
    // A link planted in the file's place (ELOOP) and a fifo (which would block the load) are
    // refused: the file read is the one the folder holds, nothing it points to.
    const UniqueFd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)};
    if (!fd) {
        return errno == ELOOP ? std::string{"is a symbolic link; name the file itself"}
                              : "cannot be opened: " + std::generic_category().message(errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return std::string{"is not a regular file"};
    }
    content.clear();
    char buffer[65536];
    for (;;) {
        const auto n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return "cannot be read: " + std::generic_category().message(errno);
        if (n == 0) return std::nullopt;
        content.append(buffer, static_cast<std::size_t>(n));
        if (content.size() > max_bytes) return "grew over " + cap_words;
    }
}

}  // namespace tea::evaluation
