// The signals that end a call: SIGINT, SIGTERM and SIGHUP are blocked from start-up and read from
// one descriptor, so a signal ends the running call and the runtime cleans up before it exits.
#pragma once

#include "util/fd.hpp"

namespace tea {

class Signals {
   public:
    static Signals &instance();
    // Blocks the three signals (before any thread exists, so every thread inherits the mask),
    // opens their descriptor and ignores SIGPIPE. Throws tea::Error (exit 125).
    void install();
    // -1 until installed.
    [[nodiscard]] int fd() const { return fd_.get(); }
    // The signal received and not yet acted on, or 0.
    int pending();

   private:
    UniqueFd fd_;
    int seen_ = 0;
};

}  // namespace tea
