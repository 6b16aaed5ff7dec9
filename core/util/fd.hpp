// RAII for file descriptors.
#pragma once

#include <unistd.h>

#include <utility>

namespace tea {

// Closes with ::close.
inline void close_fd(int fd) noexcept {
    ::close(fd);
}

// An owned descriptor, closed by `Close` when it goes.
template <void (*Close)(int) noexcept>
class BasicFd {
   public:
    BasicFd() noexcept = default;
    explicit BasicFd(int fd) noexcept : fd_(fd) {}
    BasicFd(const BasicFd &) = delete;
    BasicFd &operator=(const BasicFd &) = delete;
    BasicFd(BasicFd &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    BasicFd &operator=(BasicFd &&other) noexcept {
        if (this != &other) {
            reset(std::exchange(other.fd_, -1));
        }
        return *this;
    }
    ~BasicFd() { reset(); }

    [[nodiscard]] int get() const noexcept { return fd_; }
    [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
    explicit operator bool() const noexcept { return valid(); }
    int release() noexcept { return std::exchange(fd_, -1); }
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) {
            Close(fd_);
        }
        fd_ = fd;
    }

   private:
    int fd_ = -1;
};

using UniqueFd = BasicFd<close_fd>;

}  // namespace tea
