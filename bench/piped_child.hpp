// A child of a bench started on two pipes of the bench's own: the bare mechanism a bench compares
// the runtime's path against (its stdin written, its stdout read, nothing in between).
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>

#include "util/fd.hpp"

namespace tea::bench {

struct PipedChild {
    pid_t pid = -1;
    UniqueFd stdin_w;   // the child's stdin; reset it and the child sees its end
    UniqueFd stdout_r;  // the child's stdout
};

inline std::array<UniqueFd, 2> pipe_pair() {
    std::array<int, 2> p{};
    if (::pipe2(p.data(), O_CLOEXEC) != 0) {
        std::perror("pipe2");
        std::exit(1);
    }
    return {UniqueFd{p[0]}, UniqueFd{p[1]}};
}

// Starts `program` (no arguments) with its stdin and stdout on fresh pipes; exits the bench when
// it cannot.
inline PipedChild spawn_on_pipes(const char *program) {
    auto in = pipe_pair();
    auto out = pipe_pair();
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0].get(), 0);
    posix_spawn_file_actions_adddup2(&fa, out[1].get(), 1);
    char *argv[] = {const_cast<char *>(program), nullptr};  // NOLINT
    PipedChild child;
    if (::posix_spawn(&child.pid, program, &fa, nullptr, argv, environ) != 0) {
        std::fprintf(stderr, "cannot start %s\n", program);
        std::exit(1);
    }
    posix_spawn_file_actions_destroy(&fa);
    child.stdin_w = std::move(in[1]);
    child.stdout_r = std::move(out[0]);
    return child;
}

}  // namespace tea::bench
