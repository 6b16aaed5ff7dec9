#include "support/terminal.hpp"

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace tea::test {

Terminal::Terminal() {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0) {
        throw std::runtime_error(std::string{"cannot open a pseudo-terminal: "} +
                                 std::strerror(errno));  // NOLINT(concurrency-mt-unsafe)
    }
    std::array<char, 128> name{};
    if (::ptsname_r(master_, name.data(), name.size()) != 0) {
        throw std::runtime_error("ptsname_r failed");
    }
    path_ = name.data();
    slave_ = ::open(path_.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
    termios mode{};
    if (slave_ < 0 || ::tcgetattr(slave_, &mode) != 0) {
        throw std::runtime_error(std::string{"cannot open "} + name.data());
    }
    ::cfmakeraw(&mode);
    ::tcsetattr(slave_, TCSANOW, &mode);
    reader_ = std::thread{[this] {
        std::array<char, 4096> buffer{};
        for (;;) {
            const auto n = ::read(master_, buffer.data(), buffer.size());
            if (n > 0) {
                received_.append(buffer.data(), static_cast<std::size_t>(n));
            } else if (n < 0 && errno == EINTR) {
                continue;
            } else {
                return;  // EIO: the last holder of the device closed it
            }
        }
    }};
}

Terminal::~Terminal() {
    if (slave_ >= 0) {
        ::close(slave_);
    }
    if (reader_.joinable()) {
        reader_.join();
    }
    ::close(master_);
}

std::string Terminal::output() {
    if (slave_ >= 0) {
        ::close(slave_);
        slave_ = -1;
    }
    if (reader_.joinable()) {
        reader_.join();
    }
    return received_;
}

}  // namespace tea::test
