#include "host_probe.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <tea/plugin.hpp>
#include <tea/read_all.hpp>
#include <vector>

namespace tea::seatbelt {

namespace {

struct Answer {
    int status = -1;
    std::string said;  // its stderr and stdout
};

// The program with an empty environment, stdin closed, stdout and stderr on one pipe.
Answer run(const std::vector<std::string> &argv) {
    int out[2];
    if (::pipe(out) != 0) {
        throw tea::sdk::Unavailable("cannot make a pipe to probe sandbox-exec");
    }
    ::fcntl(out[0], F_SETFD, FD_CLOEXEC);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, out[1], 2);
    posix_spawn_file_actions_addclose(&actions, out[1]);
    std::vector<char *> args;
    args.reserve(argv.size() + 1);
    for (const auto &a : argv) {
        args.push_back(const_cast<char *>(a.c_str()));  // NOLINT: posix_spawn's signature
    }
    args.push_back(nullptr);
    char *no_env[] = {nullptr};
    pid_t pid = -1;
    const int spawned =
        ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), no_env);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    Answer answer;
    if (spawned != 0) {
        ::close(out[0]);
        answer.said = "cannot be started";
        return answer;
    }
    answer.said = tea::read_all(out[0]);
    ::close(out[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
    }
    answer.status = status;
    return answer;
}

std::string first_line(const std::string &text) {
    const auto end = text.find('\n');
    auto line = text.substr(0, std::min<std::size_t>(end, 300));
    return line.empty() ? std::string{"(it said nothing)"} : line;
}

}  // namespace

void check_sandbox_exec(const std::string &sandbox_exec, const std::string &true_program) {
    if (::access(sandbox_exec.c_str(), X_OK) != 0) {
        throw tea::sdk::Unavailable(sandbox_exec +
                                    " is missing or not executable; Seatbelt needs macOS's own "
                                    "sandbox-exec (set plugin.seatbelt.sandbox_exec if it lives "
                                    "elsewhere)");
    }
    const auto answer = run({sandbox_exec, "-p", "(version 1)(allow default)", true_program});
    if (WIFEXITED(answer.status) && WEXITSTATUS(answer.status) == 0) {
        return;
    }
    // sandbox_apply fails with EPERM inside a sandbox that restricts anything: an agent's tool,
    // an IDE's terminal. Running on without confinement would be a silent downgrade.
    if (answer.said.find("Operation not permitted") != std::string::npos) {
        throw tea::sdk::Unavailable(
            "tea-evaluate runs inside a Seatbelt sandbox (sandbox-exec could not apply a "
            "profile: " +
            first_line(answer.said) +
            "); run it from an unsandboxed terminal, or set \"confinement\": false");
    }
    throw tea::sdk::Unavailable("sandbox-exec could not confine a trivial process (" +
                                first_line(answer.said) + "); the host cannot confine");
}

}  // namespace tea::seatbelt
