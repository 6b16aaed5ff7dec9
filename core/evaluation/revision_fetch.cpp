#include "evaluation/revision_fetch.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <fstream>
#include <vector>

#include "exec/environment.hpp"
#include "util/error.hpp"

namespace tea::evaluation {

std::string fetch_revision_objects(const git::WorkspaceSource &source, const std::string &revision,
                                   const std::filesystem::path &error_file) {
    // "--" ends the options: a revision can never be read as one (check refuses a leading '-').
    std::vector<std::string> args{"git",       "-C",           source.worktree.string(),
                                  "archive",   "--format=tar", "-o",
                                  "/dev/null", revision,       "--"};
    std::vector<char *> argv;
    for (auto &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    auto environment = exec::current_environment();
    std::vector<char *> envp;
    for (auto &e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, error_file.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, "git", &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return "git could not be started: " + errno_text(rc);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
    std::ifstream in{error_file};
    std::string first;
    std::getline(in, first);
    return "git archive " + revision + " failed (status " +
           std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) +
           (first.empty() ? ")" : "): " + first.substr(0, 500));
}

}  // namespace tea::evaluation
