// A program of the host run by the runtime itself, outside any confinement, and waited for: the
// scheduler's commands (sbatch, squeue, scontrol, scancel) of the Slurm executor, mkfs.ext4 for a
// trial's file system. Its stdin is
// /dev/null, its signal mask and dispositions are the defaults (the runtime blocks the signals it
// reads from a descriptor), and its stdout and stderr are captured, each up to a bound.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tea::exec {

struct HostProgramResult {
    bool started = false;
    std::string start_error;  // why it did not start
    int status = 0;           // the exit status, or 128+N for a program killed by signal N
    std::string out;          // its stdout, at most the bound
    std::string err;          // its stderr, at most the bound
    [[nodiscard]] bool ok() const { return started && status == 0; }
};

// Runs argv[0] (looked up in PATH unless it holds a slash) and waits for it, with `environment`
// ("NAME=VALUE" items), or the runtime's own when it is null. Output past `cap` bytes per stream
// is read and dropped, so a chatty program never blocks on a full pipe.
HostProgramResult run_host_program(const std::vector<std::string> &argv,
                                   const std::vector<std::string> *environment = nullptr,
                                   std::size_t cap = std::size_t{1} << 20);

}  // namespace tea::exec
