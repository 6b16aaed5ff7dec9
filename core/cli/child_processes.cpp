#include "cli/child_processes.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <utility>

#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/signals.hpp"

namespace tea::cli {
namespace {

struct Running {
    pid_t pid = -1;
    UniqueFd out;
    std::size_t index = 0;
};

UniqueFd pipe_end(int ends[2], int keep) {
    ::close(ends[1 - keep]);
    return UniqueFd{ends[keep]};
}

// All of `bytes` to fd; false when the reader has gone (its exit status says why).
bool write_all(int fd, const std::vector<std::uint8_t> &bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

// A child in a process group of its own, so that a signal meant for the children is sent to each
// one's whole group and a terminal's Ctrl-C reaches only this process, which forwards it.
Running start_child(const std::vector<std::string> &argv, const ChildLaunch &launch,
                    std::size_t index) {
    std::vector<std::string> args = argv;
    args.insert(args.end(), launch.args.begin(), launch.args.end());
    std::vector<char *> c_args;
    c_args.reserve(args.size() + 1);
    for (auto &a : args) c_args.push_back(a.data());
    c_args.push_back(nullptr);
    int out[2];
    int in[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
        throw runtime_failure("cannot make a pipe for " + launch.name + ": " + errno_text(errno));
    }
    if (::pipe2(in, O_CLOEXEC) != 0) {
        const int error_number = errno;
        ::close(out[0]);
        ::close(out[1]);
        throw runtime_failure("cannot make a pipe for " + launch.name + ": " +
                              errno_text(error_number));
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        (void)::setpgid(0, 0);
        // A child outlives no parent killed outright: it is ended as a signalled one would be,
        // and what it cannot clean up the next run reclaims.
        if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) ::_exit(125);
        // A background group that writes to the terminal would be stopped under `stty tostop`.
        (void)::signal(SIGTTOU, SIG_IGN);
        if (::dup2(in[0], STDIN_FILENO) < 0 || ::dup2(out[1], STDOUT_FILENO) < 0) ::_exit(125);
        ::execv("/proc/self/exe", c_args.data());
        ::_exit(125);
    }
    const int fork_error = errno;
    auto read_end = pipe_end(out, 0);
    auto write_end = pipe_end(in, 1);
    if (pid < 0) {
        throw runtime_failure("cannot start " + launch.name + ": " + errno_text(fork_error));
    }
    (void)::setpgid(pid, pid);
    (void)write_all(write_end.get(), launch.input);
    return Running{pid, std::move(read_end), index};
}

int wait_status(pid_t pid) {
    int status = 0;
    pid_t waited = -1;
    while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    // A child whose end cannot be known did not succeed.
    if (waited != pid) return 125;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 125;
}

}  // namespace

std::string status_text(int status) {
    if (status > 128 && status < 128 + 65) {
        return "killed by signal " + std::to_string(status - 128);
    }
    return "exit status " + std::to_string(status);
}

ChildrenOutcome run_child_processes(const std::vector<std::string> &argv,
                                    const std::vector<ChildLaunch> &launches,
                                    std::size_t second_wave, int jobs,
                                    const std::function<bool(const ChildEnd &)> &stop_on) {
    ChildrenOutcome outcome;
    outcome.ends.resize(launches.size());
    std::vector<Running> running;
    std::size_t next = 0;
    bool stopping = false;
    const auto stop = [&](int signal_number) {
        stopping = true;
        for (const auto &child : running) (void)::kill(-child.pid, signal_number);
    };
    for (;;) {
        while (!stopping && next < launches.size() && std::cmp_less(running.size(), jobs) &&
               (next < second_wave || running.empty())) {
            try {
                running.push_back(start_child(argv, launches[next], next));
            } catch (...) {
                // The children already started end with the failure, none left behind.
                stop(SIGTERM);
                for (auto &child : running) (void)wait_status(child.pid);
                throw;
            }
            outcome.ends[next].started = true;
            ++next;
        }
        if (running.empty()) break;
        std::vector<pollfd> watched;
        // Once a signal is taken the descriptor is not read again (Signals keeps the first).
        const bool watch_signals = outcome.interrupted == 0;
        if (watch_signals) watched.push_back({Signals::instance().fd(), POLLIN, 0});
        for (const auto &child : running) watched.push_back({child.out.get(), POLLIN, 0});
        if (::poll(watched.data(), watched.size(), -1) < 0) {
            if (errno == EINTR) continue;
            const int error_number = errno;
            stop(SIGTERM);
            for (auto &child : running) (void)wait_status(child.pid);
            throw runtime_failure("cannot wait for the children: " + errno_text(error_number));
        }
        const std::size_t first_child = watch_signals ? 1 : 0;
        if (watch_signals && (watched[0].revents & POLLIN) != 0) {
            if (const int sig = Signals::instance().pending(); sig != 0) {
                outcome.interrupted = sig;
                stop(sig);
            }
        }
        for (std::size_t i = running.size(); i-- > 0;) {
            if (watched[first_child + i].revents == 0) continue;
            auto &child = running[i];
            auto &end = outcome.ends[child.index];
            char buf[4096];
            const ssize_t n = ::read(child.out.get(), buf, sizeof buf);
            if (n > 0) {
                end.out.append(buf, static_cast<std::size_t>(n));
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            const std::size_t index = child.index;
            child.out.reset();
            end.status = wait_status(child.pid);
            running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
            // Children ended by this process end as they are told; their status says nothing new.
            if (stopping) continue;
            if (stop_on(end)) {
                outcome.stopped_by = index;
                stop(SIGTERM);
            }
        }
    }
    return outcome;
}

}  // namespace tea::cli
