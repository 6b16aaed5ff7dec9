// A descriptor closed when it leaves scope; the backend's own, since a plugin links only the SDK.
#pragma once

#include <unistd.h>

#include <utility>

namespace tea::bwrap {

class Fd {
   public:
    explicit Fd(int fd) noexcept : fd_(fd) {}
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    Fd(Fd &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd &operator=(Fd &&) = delete;
    ~Fd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    [[nodiscard]] int get() const noexcept { return fd_; }

   private:
    int fd_;
};

}  // namespace tea::bwrap
