// The first process of a pid namespace that a plugin's confinement makes, kept as the namespace's
// init for the call: it reaps every orphan, passes the end of the call (SIGTERM) on to every
// process of its namespace, and it ends the namespace (the kernel then kills every process in it)
// when the process it waits for ends, or as soon as the host that ran the call is gone, however
// the host died.
//
//   tea::namespace_init::hold_end_signal();  // first of all
//   if (tea::namespace_init::host_gone()) { ...refuse to start anything... }
//   const pid_t child = fork();  // the child calls release_end_signal() and goes on to the target
//   tea::namespace_init::serve(child);  // never returns
//
// At a call's timeout, or when the host itself is interrupted, the host sends SIGTERM to the first
// process of each pid namespace the call's processes made, not to the call's process group: the
// target runs in a session of its own, out of the group's reach, and the confinement's processes
// that are in the group (bwrap, the observer) would die of it and take the target with them before
// its grace. The kernel drops a signal from outside the namespace that its init neither handles
// nor blocks; this init blocks SIGTERM from its start and passes each one the host sends to every
// process of the namespace, which then has the call's grace to end before the host kills it all.
//
// The host is watched through the call's stdout and stderr. The host runs every process of a plan
// with pipes there whose read ends only the host's own process holds (docs/plugin-authoring.md),
// so the write ends report POLLERR once the host has died, a SIGKILL included, whatever became of
// the processes between the host and this one. A parent-death signal is no such guarantee here:
// bwrap arms the one of its namespace's first process only at the end of its own set-up, so a host
// killed during that set-up leaves the namespace with none, and a descriptor that is no pipe (a
// terminal, a file) simply never reports the host gone.
#ifndef TEA_NAMESPACE_INIT_HPP
#define TEA_NAMESPACE_INIT_HPP

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <ctime>

namespace tea::namespace_init {

// What the namespace's init exits with once the host is gone: nobody reads it.
constexpr int host_gone_status = 128 + SIGKILL;

// Whether a poll of the call's stdout and stderr (events 0) says the host's read end is gone.
inline bool reports_host_gone(const std::array<pollfd, 2> &output) {
    return ((output[0].revents | output[1].revents) & POLLERR) != 0;
}

// Blocks SIGTERM, so that the host's end of the call sent before serve() waits for it instead of
// being dropped. Called first, before anything of the init can take time.
inline void hold_end_signal() {
    sigset_t end;
    sigemptyset(&end);
    sigaddset(&end, SIGTERM);
    ::pthread_sigmask(SIG_BLOCK, &end, nullptr);
}

// Undoes hold_end_signal in the init's child, before it runs anything of the target's: the target
// gets SIGTERM as the host sends it.
inline void release_end_signal() {
    sigset_t end;
    sigemptyset(&end);
    sigaddset(&end, SIGTERM);
    ::pthread_sigmask(SIG_UNBLOCK, &end, nullptr);
}

// Whether the host that ran the call has died already.
inline bool host_gone() {
    std::array<pollfd, 2> output{{{STDOUT_FILENO, 0, 0}, {STDERR_FILENO, 0, 0}}};
    return ::poll(output.data(), output.size(), 0) > 0 && reports_host_gone(output);
}

// Serves as the namespace's init until `child` ends, then exits with its status as a shell
// reports it (the exit code, or 128 + the signal), as bwrap's own init does; `child` -1: until
// the namespace is ended from outside. Passes every SIGTERM from outside the namespace on to every
// process in it. Exits with host_gone_status as soon as the host is gone.
[[noreturn]] inline void serve(pid_t child) {
    sigset_t watched_signals;
    sigemptyset(&watched_signals);
    sigaddset(&watched_signals, SIGCHLD);
    sigaddset(&watched_signals, SIGTERM);
    ::pthread_sigmask(SIG_BLOCK, &watched_signals, nullptr);
    // Without a signalfd the init still reaps, once a second, and still watches the host; the
    // host's SIGTERM then waits, blocked, and the call ends at the end of its grace.
    const int ended = ::signalfd(-1, &watched_signals, SFD_CLOEXEC | SFD_NONBLOCK);
    for (;;) {
        // Reaped before every wait: a child that ended before SIGCHLD was blocked left no signal.
        int status = 0;
        pid_t pid = 0;
        while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
            if (pid == child) {
                ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
            }
        }
        std::array<pollfd, 3> watched{
            {{STDOUT_FILENO, 0, 0}, {STDERR_FILENO, 0, 0}, {ended, POLLIN, 0}}};
        const int ready = ::poll(watched.data(), ended >= 0 ? 3 : 2, ended >= 0 ? -1 : 1000);
        if (ready < 0) {
            const timespec pause{0, 100'000'000};  // a poll that failed (ENOMEM) is tried again
            ::nanosleep(&pause, nullptr);
            continue;
        }
        if (reports_host_gone({watched[0], watched[1]})) {
            ::_exit(host_gone_status);
        }
        if (ended >= 0 && (watched[2].revents & POLLIN) != 0) {
            signalfd_siginfo info{};
            while (::read(ended, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
                // Only the host's (a sender outside the namespace has no pid in it): a target
                // cannot make the init signal every process of the namespace for it.
                if (info.ssi_signo == SIGTERM && info.ssi_pid == 0) {
                    ::kill(-1, SIGTERM);
                }
            }
        }
    }
}

}  // namespace tea::namespace_init

#endif
