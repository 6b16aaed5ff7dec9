#include "bridge/port_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <string_view>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::bridge {
namespace {

// What the file held, printable: a refusal quotes it without passing control bytes to a terminal.
std::string shown(std::string_view bytes) {
    std::string out;
    for (const char c : bytes) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f && c != '"' && c != '\\') {
            out += c;
        } else {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\x";
            out += kHex[u >> 4];
            out += kHex[u & 0xf];
        }
    }
    return out;
}

PortFileReading refused(const std::string &sentence) {
    return {PortFileReading::State::refused, 0, sentence};
}

}  // namespace

void make_port_file(const std::filesystem::path &dir,
                    std::optional<std::pair<unsigned, unsigned>> owner) {
    const auto path = dir / kPortFileName;
    const UniqueFd dir_fd{::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (!dir_fd) {
        throw runtime_failure("bridge: cannot open the directory " + dir.string() + ": " +
                              errno_text(errno));
    }
    const UniqueFd fd{::openat(dir_fd.get(), kPortFileName,
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
    if (!fd) {
        throw runtime_failure("bridge: cannot make the port file " + path.string() + ": " +
                              errno_text(errno));
    }
    if (owner && ::fchown(fd.get(), owner->first, owner->second) != 0) {
        throw runtime_failure("bridge: cannot give the port file " + path.string() +
                              " to the target's identity: " + errno_text(errno));
    }
}

void reset_bridge_directory(const std::filesystem::path &dir) {
    std::error_code ec;
    // Each entry removed as itself: remove_all follows no link it meets.
    for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
        std::filesystem::remove_all(entry.path(), ec);
        if (ec) {
            throw runtime_failure("bridge: cannot empty the directory " + dir.string() +
                                  " for the retry: " + entry.path().string() + ": " + ec.message());
        }
    }
    if (ec) {
        throw runtime_failure("bridge: cannot list the directory " + dir.string() +
                              " for the retry: " + ec.message());
    }
    make_port_file(dir);
}

PortFileReading read_port_file(const std::filesystem::path &dir) {
    const std::string path = (dir / kPortFileName).string();
    const UniqueFd dir_fd{::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (!dir_fd) {
        return refused("the bridge's directory " + dir.string() +
                       " cannot be opened: " + errno_text(errno));
    }
    // O_NOFOLLOW: a link the target put in the file's place would have the host read (and
    // quote) a file the target cannot read. O_NONBLOCK: a fifo there would hold the open.
    const UniqueFd fd{
        ::openat(dir_fd.get(), kPortFileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
    if (!fd) {
        if (errno == ELOOP) {
            return refused("the port file " + path + " is a symbolic link, not the file given");
        }
        // A service may remove the file and make it again (or be caught mid-way through making a
        // link there): gone for now is not written yet, and what takes its place is read next.
        if (errno == ENOENT) {
            return {PortFileReading::State::empty, 0, "the port file " + path + " is gone"};
        }
        return refused("the port file " + path + " cannot be opened: " + errno_text(errno));
    }
    return read_opened_port_file(fd.get(), path);
}

PortFileReading read_opened_port_file(int fd, const std::string &path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        return refused("the port file " + path + " cannot be read: " + errno_text(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        return refused("the port file " + path + " is not a regular file");
    }
    // Opened just before the service removed it (to make it again, or to plant a link there):
    // what takes its place is read next, and the removal is no link of another file.
    if (st.st_nlink == 0) {
        return {PortFileReading::State::empty, 0,
                "the port file " + path + " was removed while it was read"};
    }
    // A hard link to another file would have its first bytes quoted in the refusal.
    if (st.st_nlink != 1) {
        return refused("the port file " + path + " has other links to it");
    }
    std::array<char, kMaxPortFileBytes + 1> buffer{};
    std::size_t got = 0;
    while (got < buffer.size()) {
        const auto n = ::read(fd, buffer.data() + got, buffer.size() - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return refused("the port file " + path + " cannot be read: " + errno_text(errno));
        }
        if (n == 0) {
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    if (got > kMaxPortFileBytes) {
        return refused("the port file " + path + " holds more than " +
                       std::to_string(kMaxPortFileBytes) + " bytes, not a port");
    }
    std::string_view text{buffer.data(), got};
    if (text.empty()) {
        return {PortFileReading::State::empty, 0,
                "the port file " + path + " is empty: the service has not written its port"};
    }
    if (text.back() == '\n') {
        text.remove_suffix(1);
    }
    unsigned long value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    const bool digits_only =
        !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
    if (!digits_only || end != text.data() + text.size() ||
        (error != std::errc{} && error != std::errc::result_out_of_range)) {
        return refused(
            "the port file " + path +
            " does not hold a port (a decimal from 1 to 65535, one newline at most): \"" +
            shown({buffer.data(), got}) + "\"");
    }
    if (error == std::errc::result_out_of_range || value < 1 || value > 65535) {
        return refused("the port file " + path + " holds " + std::string{text} +
                       ", not a port from 1 to 65535");
    }
    return {PortFileReading::State::port, static_cast<std::uint16_t>(value), {}};
}

}  // namespace tea::bridge
