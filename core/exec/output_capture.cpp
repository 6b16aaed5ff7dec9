#include "exec/output_capture.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <termios.h>

namespace tea::exec::detail {

// The device of a terminal descriptor; nullopt when the descriptor is no terminal.
std::optional<dev_t> terminal_device(int fd) {
    struct stat st {};
    if (fd < 0 || ::isatty(fd) == 0 || ::fstat(fd, &st) != 0) {
        return std::nullopt;
    }
    return st.st_rdev;
}

// Decided once per call, when (and only when) a tee goes to a terminal: anything else (a pipe, a
// file, a record) is given the target's bytes unchanged.
void show_on_terminals(std::array<Capture, 2> &captures, std::array<TerminalLine, 2> &lines) {
    std::array<std::optional<dev_t>, 2> devices{};
    for (std::size_t i = 0; i < 2; ++i) {
        const int fd = captures[i].spec->tee_fd;
        devices[i] = terminal_device(fd);
        if (!devices[i]) {
            continue;
        }
        captures[i].terminal.emplace(terminal_charset());
        lines[i].fd = fd;
        const bool same_terminal = i == 1 && devices[0] && *devices[0] == *devices[1];
        captures[i].line = same_terminal ? captures[0].line : &lines[i];
    }
}

UniqueFd open_capture_file(const OutputSpec &spec) {
    if (spec.file.empty()) {
        return {};
    }
    // O_EXCL|O_NOFOLLOW: a planted file or link at the path is never written through.
    UniqueFd fd{
        ::open(spec.file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
    if (!fd) {
        throw setup_error("creating " + spec.file.string(), errno);
    }
    return fd;
}

}  // namespace tea::exec::detail
