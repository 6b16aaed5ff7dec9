// Children of this process started as `tea-evaluate ... <args of the child>`, up to N at once:
// qualify's arms (arm_processes.hpp) and run's trial tasks (trial_tasks.hpp), so that each shares
// no call session, progress display or signal handling with the others. Each child is in a
// process group of its own, is ended if this process dies, reads what it is handed on its stdin,
// and writes what it hands back on its stdout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tea::cli {

struct ChildLaunch {
    std::vector<std::string> args;    // after this process's command line
    std::vector<std::uint8_t> input;  // written to the child's stdin, which is then closed
    std::string name;                 // in messages: "arm baseline", "trial 3"
};

struct ChildEnd {
    bool started = false;  // false: never started (a signal or a failure came first)
    int status = 0;        // the exit status, or 128+N for a child killed by signal N
    std::string out;       // what it wrote on its stdout
};

struct ChildrenOutcome {
    std::vector<ChildEnd> ends;  // by launch
    int interrupted = 0;         // the signal this process took, forwarded to every child, or 0
    // The launch whose end made `stop_on` end the others, if one did.
    std::optional<std::size_t> stopped_by;
};

// Runs `launches` up to `jobs` at once, with `argv` (this process's command line) and the launch's
// args after it. The launches from `second_wave` on start only once every one before them has
// ended. A signal that would end this process is forwarded to every child and no child starts
// after it. When a child ends and `stop_on` says so, the others are sent SIGTERM and none starts
// after. Every child has ended when this returns.
ChildrenOutcome run_child_processes(const std::vector<std::string> &argv,
                                    const std::vector<ChildLaunch> &launches,
                                    std::size_t second_wave, int jobs,
                                    const std::function<bool(const ChildEnd &)> &stop_on);

// "exit status N" or "killed by signal N".
std::string status_text(int status);

}  // namespace tea::cli
