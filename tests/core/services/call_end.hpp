// The call's end as the tool-server client sees it: an eventfd (as the runner's call_ended is)
// that becomes readable after `after`, from a thread of its own.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "util/fd.hpp"

namespace tea::test {

class CallEnd {
   public:
    explicit CallEnd(std::chrono::milliseconds after)
        : ended_(::eventfd(0, EFD_CLOEXEC)), signaller_([this, after] {
              std::this_thread::sleep_for(after);
              const std::uint64_t one = 1;
              static_cast<void>(::write(ended_.get(), &one, sizeof one));
          }) {}
    CallEnd(const CallEnd &) = delete;
    CallEnd &operator=(const CallEnd &) = delete;
    CallEnd(CallEnd &&) = delete;
    CallEnd &operator=(CallEnd &&) = delete;
    ~CallEnd() { signaller_.join(); }

    [[nodiscard]] int fd() const { return ended_.get(); }

   private:
    UniqueFd ended_;
    std::thread signaller_;
};

}  // namespace tea::test
