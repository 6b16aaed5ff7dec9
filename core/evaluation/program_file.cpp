#include "evaluation/program_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <string_view>
#include <system_error>

#include "util/fd.hpp"

namespace tea::evaluation {
namespace {

std::string error_text(int error) {
    return std::generic_category().message(error);
}

std::string octal_mode(mode_t mode) {
    std::array<char, 8> digits{};
    const auto end =
        std::to_chars(digits.data(), digits.data() + digits.size(), mode & 07777U, 8).ptr;
    std::string text{digits.data(), end};
    return std::string(text.size() < 4 ? 4 - text.size() : 0, '0') + text;
}

}  // namespace

std::optional<std::string> why_not_executable(const std::filesystem::path &file) {
    const UniqueFd fd{::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)};
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
        return "cannot be read to tell whether it can be executed: " + error_text(errno);
    }
    // git records a file as executable (mode 100755) by its owner's bit, and a checkout gives
    // the target what the commit says.
    if ((st.st_mode & S_IXUSR) == 0) {
        return "is not executable (mode " + octal_mode(st.st_mode) +
               "): every call would fail with 126; chmod +x it";
    }
    std::array<char, 4> head{};
    std::size_t got = 0;
    while (got < head.size()) {
        const ssize_t n = ::read(fd.get(), head.data() + got, head.size() - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return "cannot be read to tell whether it can be executed: " + error_text(errno);
        }
        if (n == 0) {
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    const std::string_view start{head.data(), got};
    if (start.substr(0, 2) == "#!" || start == std::string_view{"\x7f"
                                                                "ELF",
                                                                4}) {
        return std::nullopt;
    }
    return "has neither an interpreter line (#!) nor an ELF header, so the kernel cannot execute "
           "it (ENOEXEC) and no call of it would start; begin it with a line such as #!/bin/sh";
}

}  // namespace tea::evaluation
