// qualify --jobs N: each arm of a qualification run by a process of its own, a child of this
// one started as `tea-evaluate ... qualify EVAL_DIR --arm SPEC`, so that arms share no call
// session, progress display or signal handling. A child reads what it is handed on its stdin
// (a mutated arm's mutation), writes its arm's run folder as an arm run in this process would,
// and hands its result back as one JSON document on its stdout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "evaluation/qualification.hpp"

namespace tea::cli {

struct ArmLaunch {
    std::string spec;                 // the --arm value
    std::vector<std::uint8_t> input;  // written to the arm's stdin, which is then closed
};

struct ArmProcessesOutcome {
    std::vector<std::optional<evaluation::ArmResult>> results;  // by spec; nullopt: did not end
    int interrupted = 0;  // the signal that ended the arms, or 0
    int failed = 0;       // the exit status of the first arm that failed to run, or 0
};

// Runs `arms` up to `jobs` at once, with `argv` (this process's command line) and `--arm SPEC`
// after it. The arms from `second_wave` on start only once every arm before them has ended. A
// signal that would end this process is forwarded to every arm, and no arm is started after it or
// after an arm fails; every arm has ended when this returns.
ArmProcessesOutcome run_arm_processes(const std::vector<std::string> &argv,
                                      const std::vector<ArmLaunch> &arms, std::size_t second_wave,
                                      int jobs);

}  // namespace tea::cli
