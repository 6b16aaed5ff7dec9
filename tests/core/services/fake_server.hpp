// A tool server for a test: a program started on two pipes, its stdin and stdout, killed and
// reaped when the test is done with it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/fd.hpp"

namespace tea::test {

class FakeServer {
   public:
    explicit FakeServer(const std::vector<std::string> &argv) {
        std::array<int, 2> in{};
        std::array<int, 2> out{};
        if (::pipe2(in.data(), O_CLOEXEC) != 0 || ::pipe2(out.data(), O_CLOEXEC) != 0) {
            throw std::runtime_error("pipe2 failed");
        }
        UniqueFd in_read{in[0]};
        UniqueFd out_write{out[1]};
        to_server = UniqueFd{in[1]};
        from_server = UniqueFd{out[0]};
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, in_read.get(), 0);
        posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
        std::vector<char *> args;
        for (const auto &arg : argv) {
            args.push_back(const_cast<char *>(arg.c_str()));
        }
        args.push_back(nullptr);
        const int failed = ::posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (failed != 0) {
            throw std::runtime_error("cannot start " + argv[0]);
        }
    }
    FakeServer(const FakeServer &) = delete;
    FakeServer &operator=(const FakeServer &) = delete;
    ~FakeServer() {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }

    UniqueFd to_server;
    UniqueFd from_server;

   private:
    pid_t pid_ = -1;
};

}  // namespace tea::test
