#include "cli/runtime.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "plugins/selection.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace tea::cli {

Runtime load_runtime(const CommonOptions &options) {
    config::Sources sources;
    sources.explicit_file = options.config_file;
    sources.backend_flag = options.backend;
    sources.observer_flag = options.observer;
    auto config = config::load(sources);
    auto paths = RuntimePaths::detect();
    auto registry = plugins::Registry::discover(plugins::manifest_search_path(config, paths),
                                                paths.plugin_libdir);
    return Runtime{std::move(config), std::move(paths), std::move(registry)};
}

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
        throw runtime_error("cannot block signals: " + errno_text(errno));
    }
    fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!fd_) {
        throw runtime_error("cannot watch signals: " + errno_text(errno));
    }
    // A reader that closed the runtime's stdout must not kill it mid-cleanup.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    if (::sigaction(SIGPIPE, &ignore, nullptr) != 0) {
        throw runtime_error("cannot ignore SIGPIPE: " + errno_text(errno));
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

}  // namespace tea::cli
