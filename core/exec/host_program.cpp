#include "exec/host_program.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "exec/environment.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::exec {

HostProgramResult run_host_program(const std::vector<std::string> &argv,
                                   const std::vector<std::string> *environment, std::size_t cap) {
    HostProgramResult result;
    if (argv.empty()) {
        result.start_error = "no program named";
        return result;
    }
    std::array<UniqueFd, 2> read_ends;
    std::array<UniqueFd, 2> write_ends;
    for (std::size_t i = 0; i < 2; ++i) {
        int ends[2];
        if (::pipe2(ends, O_CLOEXEC) != 0) {
            result.start_error = "cannot make a pipe: " + errno_text(errno);
            return result;
        }
        read_ends[i] = UniqueFd{ends[0]};
        write_ends[i] = UniqueFd{ends[1]};
    }
    std::vector<std::string> args = argv;
    std::vector<char *> c_args;
    c_args.reserve(args.size() + 1);
    for (auto &a : args) c_args.push_back(a.data());
    c_args.push_back(nullptr);
    auto variables = environment != nullptr ? *environment : current_environment();
    std::vector<char *> envp;
    envp.reserve(variables.size() + 1);
    for (auto &e : variables) envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, write_ends[0].get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, write_ends[1].get(), STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigset_t all;
    sigemptyset(&none);
    sigfillset(&all);
    // The runtime's blocked signals would otherwise stay blocked in the program: Ctrl-C and the
    // scheduler's own signals would not end it.
    // A process group of its own: a terminal's Ctrl-C reaches the runtime, which decides, and
    // not an sbatch that has submitted or an scancel on its way.
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    pid_t pid = -1;
    const int rc =
        ::posix_spawnp(&pid, args[0].c_str(), &actions, &attr, c_args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    write_ends[0].reset();
    write_ends[1].reset();
    if (rc != 0) {
        result.start_error = args[0] + " could not be started: " + errno_text(rc);
        return result;
    }
    result.started = true;
    std::array<std::string *, 2> into{&result.out, &result.err};
    for (;;) {
        std::vector<pollfd> watched;
        std::vector<std::size_t> which;
        for (std::size_t i = 0; i < 2; ++i) {
            if (read_ends[i]) {
                watched.push_back({read_ends[i].get(), POLLIN, 0});
                which.push_back(i);
            }
        }
        if (watched.empty()) break;
        if (::poll(watched.data(), watched.size(), -1) < 0) {
            if (errno == EINTR) continue;
            // Closed, so that a program blocked on a full pipe ends rather than waits for ever.
            read_ends[0].reset();
            read_ends[1].reset();
            break;
        }
        for (std::size_t k = 0; k < watched.size(); ++k) {
            if (watched[k].revents == 0) continue;
            const std::size_t i = which[k];
            char buf[4096];
            const ssize_t n = ::read(read_ends[i].get(), buf, sizeof buf);
            if (n > 0) {
                auto &text = *into[i];
                text.append(
                    buf, std::min(static_cast<std::size_t>(n), cap - std::min(cap, text.size())));
            } else if (n == 0 || errno != EINTR) {
                read_ends[i].reset();
            }
        }
    }
    int status = 0;
    pid_t waited = -1;
    while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    // A program whose end cannot be known did not succeed.
    result.status = waited != pid         ? 125
                    : WIFEXITED(status)   ? WEXITSTATUS(status)
                    : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                          : 125;
    return result;
}

}  // namespace tea::exec
