#include "cli/arm_processes.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>

#include "util/console.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/signals.hpp"

namespace tea::cli {
namespace {

struct Running {
    pid_t pid = -1;
    UniqueFd out;
    std::size_t index = 0;
    std::string text;
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

// A child in a process group of its own, so that a signal meant for the arms is sent to each
// arm's whole group and a terminal's Ctrl-C reaches only this process, which forwards it.
Running start_arm(const std::vector<std::string> &argv, const ArmLaunch &launch,
                  std::size_t index) {
    std::vector<std::string> args = argv;
    args.insert(args.end(), {"--arm", launch.spec});
    std::vector<char *> c_args;
    c_args.reserve(args.size() + 1);
    for (auto &a : args) c_args.push_back(a.data());
    c_args.push_back(nullptr);
    int out[2];
    int in[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
        throw runtime_failure("cannot make a pipe for arm " + launch.spec + ": " +
                              errno_text(errno));
    }
    if (::pipe2(in, O_CLOEXEC) != 0) {
        const int error_number = errno;
        ::close(out[0]);
        ::close(out[1]);
        throw runtime_failure("cannot make a pipe for arm " + launch.spec + ": " +
                              errno_text(error_number));
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        (void)::setpgid(0, 0);
        // An arm outlives no qualify killed outright: it is ended as a signalled one would be,
        // and what it cannot clean up the next run reclaims.
        if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) ::_exit(125);
        if (::dup2(in[0], STDIN_FILENO) < 0 || ::dup2(out[1], STDOUT_FILENO) < 0) ::_exit(125);
        ::execv("/proc/self/exe", c_args.data());
        ::_exit(125);
    }
    const int fork_error = errno;
    auto read_end = pipe_end(out, 0);
    auto write_end = pipe_end(in, 1);
    if (pid < 0) {
        throw runtime_failure("cannot start arm " + launch.spec + ": " + errno_text(fork_error));
    }
    (void)::setpgid(pid, pid);
    (void)write_all(write_end.get(), launch.input);
    return Running{pid, std::move(read_end), index, {}};
}

// The arm's status once its stdout has closed: its result, or the reason it has none.
int reap(Running &arm, const std::string &spec, ArmProcessesOutcome &outcome) {
    int status = 0;
    while (::waitpid(arm.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        try {
            outcome.results[arm.index] =
                evaluation::arm_result_from_json(nlohmann::json::parse(arm.text));
            return 0;
        } catch (const nlohmann::json::exception &e) {
            console::err() << "tea-evaluate: qualify: arm " << spec
                           << " handed back no result its parent can read: " << e.what() << '\n';
            return static_cast<int>(ExitCode::runtime);
        }
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    console::err() << "tea-evaluate: qualify: arm " << spec << " was killed by signal "
                   << WTERMSIG(status) << '\n';
    return 128 + WTERMSIG(status);
}

}  // namespace

ArmProcessesOutcome run_arm_processes(const std::vector<std::string> &argv,
                                      const std::vector<ArmLaunch> &arms, std::size_t second_wave,
                                      int jobs) {
    ArmProcessesOutcome outcome;
    outcome.results.resize(arms.size());
    std::vector<Running> running;
    std::size_t next = 0;
    bool stopping = false;
    const auto stop = [&](int signal_number) {
        stopping = true;
        for (const auto &arm : running) (void)::kill(-arm.pid, signal_number);
    };
    for (;;) {
        while (!stopping && next < arms.size() && std::cmp_less(running.size(), jobs) &&
               (next < second_wave || running.empty())) {
            running.push_back(start_arm(argv, arms[next], next));
            ++next;
        }
        if (running.empty()) break;
        std::vector<pollfd> watched;
        // Once a signal is taken the descriptor is not read again (Signals keeps the first).
        const bool watch_signals = outcome.interrupted == 0;
        if (watch_signals) watched.push_back({Signals::instance().fd(), POLLIN, 0});
        for (const auto &arm : running) watched.push_back({arm.out.get(), POLLIN, 0});
        if (::poll(watched.data(), watched.size(), -1) < 0) {
            if (errno == EINTR) continue;
            const int error_number = errno;
            stop(SIGTERM);
            throw runtime_failure("cannot wait for the arms: " + errno_text(error_number));
        }
        const std::size_t first_arm = watch_signals ? 1 : 0;
        if (watch_signals && (watched[0].revents & POLLIN) != 0) {
            if (const int sig = Signals::instance().pending(); sig != 0) {
                outcome.interrupted = sig;
                stop(sig);
            }
        }
        for (std::size_t i = running.size(); i-- > 0;) {
            if (watched[first_arm + i].revents == 0) continue;
            auto &arm = running[i];
            char buf[4096];
            const ssize_t n = ::read(arm.out.get(), buf, sizeof buf);
            if (n > 0) {
                arm.text.append(buf, static_cast<std::size_t>(n));
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            arm.out.reset();
            const int status = reap(arm, arms[arm.index].spec, outcome);
            running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
            // Arms ended by this process end as they are told; their status says nothing new.
            if (status == 0 || stopping) continue;
            if (status > 128 && status < 128 + 65) {
                // An arm interrupted by a signal of its own ends the others as this one's would.
                outcome.interrupted = status - 128;
                stop(status - 128);
            } else {
                outcome.failed = status;
                stop(SIGTERM);
            }
        }
    }
    return outcome;
}

}  // namespace tea::cli
