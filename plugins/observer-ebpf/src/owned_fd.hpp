// A descriptor closed when it goes out of scope, unless released.
#pragma once

#include <unistd.h>

#include <utility>

namespace tea::ebpf {

class OwnedFd {
   public:
    explicit OwnedFd(int fd = -1) : fd_{fd} {}
    OwnedFd(const OwnedFd &) = delete;
    OwnedFd &operator=(const OwnedFd &) = delete;
    OwnedFd(OwnedFd &&other) noexcept : fd_{other.release()} {}
    OwnedFd &operator=(OwnedFd &&other) noexcept {
        if (this != &other) {
            if (fd_ >= 0) {
                ::close(fd_);
            }
            fd_ = other.release();
        }
        return *this;
    }
    ~OwnedFd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    [[nodiscard]] int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }

   private:
    int fd_;
};

}  // namespace tea::ebpf
