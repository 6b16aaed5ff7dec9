// Running the agent CLI for one session: in a process group of its own, the prompt on its stdin,
// its stdout streamed into the transcript, its stderr left as the runner's, a time budget, and
// the runner's SIGTERM and SIGINT passed on to it.
//
// Nothing it started is left running when this returns: once the agent has exited, or its time is
// up, its whole process group is killed, and then every process descended from the runner (the
// runner is their subreaper, so one that left the group with setsid is still found and reaped).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "transcript.hpp"

namespace tea::skill_runner {

struct AgentSession {
    std::string program;            // a path, as execve takes it
    std::vector<std::string> argv;  // argv[0] included
    std::vector<std::string> env;   // the exact environment
    std::string prompt;             // written to its stdin
    std::chrono::seconds max_time{600};
};

struct AgentEnd {
    bool exited = false;  // it exited (else a signal ended it)
    int status = 0;       // its exit code, or the signal
    bool time_budget_reached = false;
    int forwarded_signal = 0;  // a SIGTERM or SIGINT the runner received and passed on, or 0
};

// Runs the session to its end, feeding `transcript` with its stdout. Throws tea::Error (exit 5
// from main) when the agent cannot be started.
AgentEnd run_agent(const AgentSession &session, TranscriptStream &transcript);

}  // namespace tea::skill_runner
