// A service for a test that reports its port as a started HTTP service does: the program is
// given TEA_PORT_FILE naming a file in a directory of the test's own, and the test waits for the
// port to appear there. Killed and reaped when the test is done with it.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::test {

class PortServer {
   public:
    PortServer(const std::vector<std::string> &argv, std::chrono::milliseconds wait)
        : dir_("tea-mcp-http") {
        const std::string port_file = (dir_.path() / "port").string();
        std::vector<std::string> env = environment_with({"TEA_PORT_FILE=" + port_file});
        std::vector<char *> args = c_strings(argv);
        std::vector<char *> envp = c_strings(env);
        if (::posix_spawnp(&pid_, args[0], nullptr, nullptr, args.data(), envp.data()) != 0) {
            throw std::runtime_error("cannot start " + argv[0]);
        }
        const auto until = std::chrono::steady_clock::now() + wait;
        while (std::chrono::steady_clock::now() < until) {
            std::ifstream in(port_file);
            unsigned port = 0;
            if (in >> port && port > 0 && port < 65536) {
                port_ = static_cast<std::uint16_t>(port);
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds{20});
        }
    }
    PortServer(const PortServer &) = delete;
    PortServer &operator=(const PortServer &) = delete;
    PortServer(PortServer &&) = delete;
    PortServer &operator=(PortServer &&) = delete;
    ~PortServer() {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }

    // 0 when no port was reported within the wait.
    [[nodiscard]] std::uint16_t port() const { return port_; }

   private:
    TempDir dir_;
    pid_t pid_ = -1;
    std::uint16_t port_ = 0;
};

}  // namespace tea::test
