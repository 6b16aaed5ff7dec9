// What is left to read from a descriptor (a /proc file, a pipe), with plain read(2) calls: no
// stream, so a plugin that reads sets up no copy of the C++ locale, and a read cut short by a
// signal is resumed.
//
//   const std::string text = tea::read_all(fd);
#ifndef TEA_READ_ALL_HPP
#define TEA_READ_ALL_HPP

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <string>

namespace tea {

// Everything up to the end of the file, or up to the first error (what came before it is kept).
inline std::string read_all(int fd) {
    std::string text;
    // Left uninitialised: read fills it.
    std::array<char, 16384> buffer;  // NOLINT(cppcoreguidelines-pro-type-member-init)
    for (;;) {
        const auto n = ::read(fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return text;
        }
        text.append(buffer.data(), static_cast<std::size_t>(n));
    }
}

}  // namespace tea

#endif  // TEA_READ_ALL_HPP
