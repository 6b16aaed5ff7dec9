#include "util/signals.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "util/error.hpp"

namespace tea {

Signals &Signals::instance() {
    static Signals signals;
    return signals;
}

void Signals::install() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    // Blocked before any thread exists, so every thread inherits the mask.
    if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) {
        throw runtime_failure("cannot block signals: " + errno_text(errno));
    }
    fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!fd_) {
        throw runtime_failure("cannot watch signals: " + errno_text(errno));
    }
    // A reader that closed the runtime's stdout must not kill it mid-cleanup.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    if (::sigaction(SIGPIPE, &ignore, nullptr) != 0) {
        throw runtime_failure("cannot ignore SIGPIPE: " + errno_text(errno));
    }
}

int Signals::pending() {
    if (seen_ == 0 && fd_) {
        signalfd_siginfo info{};
        if (::read(fd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
            seen_ = static_cast<int>(info.ssi_signo);
        }
    }
    return seen_;
}

}  // namespace tea
