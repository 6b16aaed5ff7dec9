// The one place that starts a target's processes: it executes an exec plan.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "exec/call_cgroup.hpp"
#include "exec/exec_plan.hpp"

namespace tea::redaction {
class SecretMatcher;  // redaction/secret_matcher.hpp
}  // namespace tea::redaction

namespace tea::exec {

struct OutputSpec {
    std::filesystem::path file;   // created (never overwritten); empty: not kept
    std::uint64_t cap_bytes = 0;  // bytes kept in file, after redaction; the rest is counted
    int tee_fd = -1;              // also copied here when >= 0 (the runtime's own stdout)
    // The secrets replaced by "[redacted]" before the stream reaches the file or the tee, a
    // secret split across the target's writes included; null: none.
    std::shared_ptr<const redaction::SecretMatcher> redact;
};

struct StdinSpec {
    enum class Kind { null_device, inherit, file } kind = Kind::null_device;
    std::filesystem::path file;
};

// What the runtime's side of a conversation with the running call is handed.
struct ConversationChannel {
    int to_target = -1;    // stdio conversations: the write end of the target's stdin pipe
    int from_target = -1;  // stdio conversations: the read end of the target's stdout pipe
    int call_ended = -1;   // becomes readable (POLLIN) once the plan's process has ended
    pid_t pid = -1;        // the plan's process (its first process)
    // The plan declares a confinement (not "opt-out"): its target runs in a network of its own,
    // below `pid`, and never in the runtime's.
    bool confined = false;
};

// A peer the runtime talks to while the call runs: a tool server's stdio, an HTTP service.
struct Conversation {
    // true: the target's stdin and stdout are pipes handed to `talk` (StdinSpec and the out
    // capture are then not used; stderr is captured as always).
    bool stdio = false;
    // Run on a thread of its own once the plan's process has started; the call is ended (TERM to
    // its pid namespace inits, KILL after the grace, as at a timeout) when it returns, and the
    // runner joins it before run_call returns. Must return soon after call_ended is readable.
    // What it throws is thrown again by run_call (StartedCall::finish) once the call has ended.
    std::function<void(const ConversationChannel &)> talk;
};

struct RunOptions {
    std::optional<std::chrono::milliseconds> timeout;
    std::chrono::milliseconds kill_grace{2000};
    OutputSpec out;
    OutputSpec err;
    StdinSpec in;
    // A signalfd the runtime watches (SIGINT, SIGTERM, SIGHUP blocked); -1: none.
    int signal_fd = -1;
    // The call's own mount namespace (call_mounts.hpp), which every process of the plan enters
    // before anything else; -1: the runtime's. Entering one takes root.
    int mount_namespace = -1;
    // What the call may consume, enforced by a cgroup of its own where the host has one
    // (exec/call_cgroup.hpp), by resource limits otherwise; nothing bounded when empty.
    Budget budget;
    // A conversation with the call while it runs; none: the call is only waited for.
    std::optional<Conversation> conversation;
};

struct StreamResult {
    std::uint64_t total_bytes = 0;  // written by the target
    std::uint64_t kept_bytes = 0;   // in the file, after redaction
    bool truncated = false;         // the redacted stream was longer than the cap
    std::uint64_t redactions = 0;   // markers that replaced a secret
};

struct CallResult {
    bool started = false;
    int start_errno = 0;      // why it did not start
    std::string start_error;  // the sentence
    int exit_code = -1;       // when it exited
    int signal = 0;           // when a signal ended it
    bool timed_out = false;
    bool ended_by_runtime = false;  // the conversation finished and the runtime ended the call
    // Processes of the call that were still running when its first process had ended, reparented
    // to the runtime (a child subreaper; 0 otherwise): under an observer that wraps the plan, a
    // tracer that ended before the processes it traced.
    std::size_t outlived_leader = 0;
    int interrupted_by = 0;  // the signal that ended the runtime's wait
    std::chrono::nanoseconds elapsed{0};
    StreamResult out;
    StreamResult err;
    // For a plan with a setup mark: whether its mechanism took the mark, that is, whether its
    // confinement stood and the target was about to start. Unmarked plans say nothing.
    bool setup_marked = false;
    bool setup_reached = false;
    // How the budget was enforced and what the kernel counted against it, and the plan's own
    // resource limits.
    BudgetReport budget;
    Limits limits;

    // The shell's convention: the exit code, or 128 + the signal.
    [[nodiscard]] int status() const { return signal != 0 ? 128 + signal : exit_code; }
};

// Runs the plan to its end: its own process group, exactly the plan's
// environment, only 0-2 and the plan's files inherited, output through pipes
// into capped files, the whole group ended at the timeout (SIGTERM, then SIGKILL
// after the grace; a confined plan's SIGTERM goes to the inits of the pid
// namespaces it made, namespace_inits.hpp) and when the leader exits. A runtime
// that is a child subreaper (see become_subreaper) also ends every orphan the
// call left behind.
// A runtime killed outright ends nothing itself: the read ends of the output
// pipes are this process's alone, so a confinement inside sees their write ends
// report POLLERR and ends itself (ExecPlan); the processes of a plan that
// confines nothing die with the thread that started them (PR_SET_PDEATHSIG),
// which must therefore be the one that waits for the call.
// Throws tea::Error (exit 125) when the runtime itself cannot set the call up.
// A plan with deferred files is refused: see StartedCall.
CallResult run_call(const ExecPlan &plan, const RunOptions &options);

// (ABI 1.5) A call whose process starts before its plan is complete, so that the process's own
// start overlaps the work the complete plan needs. Started from a plan whose deferred files are
// sockets the runtime holds the other end of; finished with the complete plan, which must start
// the same process: the runner then writes each deferred file's content, closes it, and runs the
// call to its end as run_call does. Destroyed unfinished (the complete plan could not be made, or
// it differs), it kills the process's group and reaps it: a process never given its files whole
// sees them end early, and must then refuse to start its target.
class StartedCall {
   public:
    // Throws tea::Error (exit 125) when the runtime cannot set the call up; a process that could
    // not be executed is reported by finish, as run_call reports it.
    StartedCall(const ExecPlan &staged, const RunOptions &options);
    StartedCall(const StartedCall &) = delete;
    StartedCall &operator=(const StartedCall &) = delete;
    StartedCall(StartedCall &&) noexcept;
    StartedCall &operator=(StartedCall &&) = delete;
    ~StartedCall();

    // The started process; -1 when it could not be executed.
    [[nodiscard]] pid_t pid() const;
    // Checks that `complete` starts the very process started (argv, environment, directory,
    // identity, child set-up, setup mark, every file but the deferred ones' content, lend and
    // confinement), fills the deferred files and waits for the call's end. Throws tea::Error
    // naming what differs, and the process is then killed; callable once.
    CallResult finish(const ExecPlan &complete);

   private:
    friend CallResult run_call(const ExecPlan &plan, const RunOptions &options);
    CallResult wait_for_end();

    struct State;
    std::unique_ptr<State> state_;
};

// Grows this process's descriptor table to hold every number the runner uses, while the process
// has one thread (a growth once threads exist waits for an RCU grace period). Returns the number
// it reached, already closed again, or -1 when it could not (nothing else depends on it).
int reserve_descriptor_table();

// Makes the runtime the reaper of its orphaned descendants, so a process that
// left the call's group (setsid, double fork) is still found and ended.
void become_subreaper();

// argv[0] resolved against the runtime's own PATH (not the call's): the plan
// names what the runtime runs. Empty when not found.
std::string resolve_program(const std::string &name);

}  // namespace tea::exec
