#include "agent_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::skill_runner {
namespace {

using Clock = std::chrono::steady_clock;

// After the agent has exited and its group is killed, how long its stdout may still take to
// close: a process that left the group may hold it open, and the runner does not wait for it.
constexpr std::chrono::milliseconds kDrainTime{2000};

Error start_failure(const std::string &what, int error) {
    return runtime_failure("cannot start the agent: " + what + ": " + std::strerror(error));
}

// The prompt as a file, so the agent may read it at its own pace and the runner need not feed a
// pipe while it reads the agent's output.
UniqueFd prompt_file(const std::string &prompt) {
    UniqueFd fd{::memfd_create("prompt", MFD_CLOEXEC)};
    if (!fd) {
        throw start_failure("memfd_create", errno);
    }
    for (std::size_t done = 0; done < prompt.size();) {
        const auto n = ::write(fd.get(), prompt.data() + done, prompt.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            throw start_failure("writing the prompt", n < 0 ? errno : EIO);
        }
        done += static_cast<std::size_t>(n);
    }
    if (::lseek(fd.get(), 0, SEEK_SET) != 0) {
        throw start_failure("lseek", errno);
    }
    return fd;
}

// SIGTERM and SIGINT as a descriptor, so the loop below sees them between reads; blocked while
// the session runs, restored after.
class ForwardedSignals {
   public:
    ForwardedSignals() {
        sigemptyset(&set_);
        sigaddset(&set_, SIGTERM);
        sigaddset(&set_, SIGINT);
        if (::sigprocmask(SIG_BLOCK, &set_, &old_) != 0) {
            throw start_failure("sigprocmask", errno);
        }
        fd_.reset(::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
        if (!fd_) {
            const int error = errno;
            ::sigprocmask(SIG_SETMASK, &old_, nullptr);
            throw start_failure("signalfd", error);
        }
    }
    ForwardedSignals(const ForwardedSignals &) = delete;
    ForwardedSignals &operator=(const ForwardedSignals &) = delete;
    ForwardedSignals(ForwardedSignals &&) = delete;
    ForwardedSignals &operator=(ForwardedSignals &&) = delete;
    ~ForwardedSignals() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }

    [[nodiscard]] int fd() const { return fd_.get(); }
    // The signal read, or 0.
    int take() {
        signalfd_siginfo info{};
        const auto n = ::read(fd_.get(), &info, sizeof info);
        return n == static_cast<ssize_t>(sizeof info) ? static_cast<int>(info.ssi_signo) : 0;
    }

   private:
    sigset_t set_{};
    sigset_t old_{};
    UniqueFd fd_;
};

std::vector<char *> pointers(const std::vector<std::string> &items) {
    std::vector<char *> out;
    out.reserve(items.size() + 1);
    for (const auto &item : items) {
        out.push_back(const_cast<char *>(item.c_str()));  // NOLINT: execve's signature
    }
    out.push_back(nullptr);
    return out;
}

// The agent started in a new process group (its id the agent's pid), with the default handling
// of every signal the runner changes and none blocked.
pid_t spawn_agent(const AgentSession &session, int stdin_fd, int stdout_fd) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
    posix_spawn_file_actions_adddup2(&actions, stdin_fd, STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, STDOUT_FILENO);
    sigset_t none;
    sigset_t defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int signal : {SIGTERM, SIGINT, SIGPIPE, SIGHUP}) {
        sigaddset(&defaults, signal);
    }
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(
        &attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    auto argv = pointers(session.argv);
    auto env = pointers(session.env);
    pid_t pid = -1;
    const int error = ::posix_spawn(&pid, session.program.c_str(), &actions, &attributes,
                                    argv.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (error != 0) {
        throw start_failure(session.program, error);
    }
    return pid;
}

// Reads what the pipe holds now into the transcript; false at its end.
bool pump(int fd, TranscriptStream &transcript) {
    std::array<char, 65536> buffer;  // NOLINT(cppcoreguidelines-pro-type-member-init)
    const auto n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
        return errno == EINTR || errno == EAGAIN;
    }
    if (n == 0) {
        return false;
    }
    transcript.feed(std::string_view{buffer.data(), static_cast<std::size_t>(n)});
    return true;
}

// The runner's children now: the agent, and what it left behind once its parent is gone (the
// runner is their subreaper).
std::vector<pid_t> own_children() {
    std::vector<pid_t> children;
    std::ifstream file{"/proc/self/task/" + std::to_string(::getpid()) + "/children"};
    for (pid_t child = 0; file >> child;) {
        children.push_back(child);
    }
    return children;
}

// Kills and reaps every process descended from the runner, whatever group or session it moved
// to: an agent's tool that left with setsid would otherwise outlive the session it served.
void end_descendants() {
    for (int round = 0; round < 1000; ++round) {
        const auto children = own_children();
        if (children.empty()) {
            return;
        }
        for (const pid_t child : children) {
            ::kill(child, SIGKILL);
        }
        for (const pid_t child : children) {
            while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
            }
        }
    }
}

int milliseconds_until(Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 60'000) + 1);
}

}  // namespace

AgentEnd run_agent(const AgentSession &session, TranscriptStream &transcript) {
    // What the agent leaves behind is re-parented to the runner, which can then end it.
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        throw start_failure("prctl(PR_SET_CHILD_SUBREAPER)", errno);
    }
    auto prompt = prompt_file(session.prompt);
    std::array<int, 2> out{-1, -1};
    if (::pipe2(out.data(), O_CLOEXEC) != 0) {
        throw start_failure("pipe2", errno);
    }
    UniqueFd out_read{out[0]};
    UniqueFd out_write{out[1]};
    ForwardedSignals signals;
    const pid_t pid = spawn_agent(session, prompt.get(), out_write.get());
    out_write.reset();
    prompt.reset();
    UniqueFd pidfd{static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))};
    if (!pidfd) {
        const int error = errno;
        ::killpg(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        throw start_failure("pidfd_open", error);
    }

    AgentEnd end;
    const auto deadline = Clock::now() + session.max_time;
    bool reading = true;
    bool running = true;
    while (running) {
        std::array<pollfd, 3> fds{pollfd{pidfd.get(), POLLIN, 0}, pollfd{signals.fd(), POLLIN, 0},
                                  pollfd{reading ? out_read.get() : -1, POLLIN, 0}};
        const int ready = ::poll(fds.data(), fds.size(),
                                 end.time_budget_reached ? -1 : milliseconds_until(deadline));
        if (ready < 0 && errno != EINTR) {
            throw runtime_failure(std::string{"poll: "} + std::strerror(errno));
        }
        if (reading && (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            reading = pump(out_read.get(), transcript);
        }
        if ((fds[1].revents & POLLIN) != 0) {
            if (const int signal = signals.take(); signal != 0) {
                end.forwarded_signal = signal;
                ::kill(pid, signal);
            }
        }
        if ((fds[0].revents & POLLIN) != 0) {
            running = false;  // exited: a zombie, so its group's id is not yet free for reuse
        } else if (!end.time_budget_reached && Clock::now() >= deadline) {
            end.time_budget_reached = true;
            ::killpg(pid, SIGKILL);
        }
    }
    // What the agent started and left in its group ends with it.
    ::killpg(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    end.exited = WIFEXITED(status);
    end.status = end.exited ? WEXITSTATUS(status) : WTERMSIG(status);
    end_descendants();
    const auto drain_until = Clock::now() + kDrainTime;
    while (reading) {
        pollfd fd{out_read.get(), POLLIN, 0};
        if (::poll(&fd, 1, milliseconds_until(drain_until)) <= 0) {
            break;
        }
        reading = pump(out_read.get(), transcript);
    }
    transcript.finish();
    return end;
}

}  // namespace tea::skill_runner
