// The runtime's side of a conversation with a running call (RunOptions::conversation): the pipes
// a stdio conversation gives the target as its stdin and stdout, the thread that runs `talk`, and
// the two signals between that thread and the runner: the call's end, and talk's return.
#pragma once

#include <sys/types.h>

#include <exception>
#include <thread>

#include "exec/call_runner.hpp"
#include "util/fd.hpp"

namespace tea::exec::detail {

class ConversationThread {
   public:
    // Makes the signals, and for a stdio conversation the two pipes, whose target ends lie above
    // the plan's descriptor numbers. Throws tea::Error (exit 125) when it cannot.
    explicit ConversationThread(const Conversation &conversation);
    ConversationThread(const ConversationThread &) = delete;
    ConversationThread &operator=(const ConversationThread &) = delete;
    ConversationThread(ConversationThread &&) = delete;
    ConversationThread &operator=(ConversationThread &&) = delete;
    // Makes the call's end readable and joins talk's thread; what talk threw is dropped.
    ~ConversationThread();

    // The target's ends of a stdio conversation (its stdin's read end, its stdout's write end);
    // invalid otherwise. The runner places them at 0 and 1 and closes them once it started.
    UniqueFd &target_stdin() { return target_stdin_; }
    UniqueFd &target_stdout() { return target_stdout_; }

    // Starts talk on a thread of its own, for the plan's process `pid` (of a plan that confines
    // its target, or not: ConversationChannel::confined).
    void start(pid_t pid, bool confined);
    // Readable once talk has returned (or thrown); the runner then ends the call.
    [[nodiscard]] int returned_fd() const { return returned_.get(); }
    // Makes ConversationChannel::call_ended readable; idempotent.
    void call_ended();
    // call_ended, then waits for talk's return; rethrows what talk threw.
    void join();

   private:
    Conversation conversation_;
    UniqueFd to_target_;
    UniqueFd from_target_;
    UniqueFd target_stdin_;
    UniqueFd target_stdout_;
    UniqueFd ended_;     // eventfd: the call has ended
    UniqueFd returned_;  // eventfd: talk has returned
    std::thread thread_;
    std::exception_ptr thrown_;
    bool ended_signalled_ = false;
};

}  // namespace tea::exec::detail
