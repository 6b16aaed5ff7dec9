#include "exec/conversation.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <utility>

#include "exec/plan_descriptors.hpp"

namespace tea::exec::detail {
namespace {

UniqueFd make_event() {
    UniqueFd fd{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
    if (!fd) {
        throw setup_error("eventfd", errno);
    }
    return fd;
}

void signal_event(int fd) {
    const std::uint64_t one = 1;
    // An eventfd's counter takes 1 until it nears 2^64: the write cannot fail here.
    (void)::write(fd, &one, sizeof one);
}

std::array<UniqueFd, 2> make_pipe() {
    std::array<int, 2> p{};
    if (::pipe2(p.data(), O_CLOEXEC) != 0) {
        throw setup_error("pipe2", errno);
    }
    return {UniqueFd{p[0]}, UniqueFd{p[1]}};
}

}  // namespace

ConversationThread::ConversationThread(const Conversation &conversation)
    : conversation_{conversation}, ended_{make_event()}, returned_{make_event()} {
    if (conversation_.stdio) {
        auto in = make_pipe();
        auto out = make_pipe();
        target_stdin_ = above_plan_numbers(std::move(in[0]));
        to_target_ = std::move(in[1]);
        from_target_ = std::move(out[0]);
        target_stdout_ = above_plan_numbers(std::move(out[1]));
    }
}

ConversationThread::~ConversationThread() {
    call_ended();
    if (thread_.joinable()) {
        thread_.join();
    }
}

void ConversationThread::start(pid_t pid, bool confined) {
    thread_ = std::thread{[this, pid, confined] {
        const ConversationChannel channel{to_target_.get(), from_target_.get(), ended_.get(), pid,
                                          confined};
        try {
            if (conversation_.talk) {
                conversation_.talk(channel);
            }
        } catch (...) {
            thrown_ = std::current_exception();
        }
        // The runner learns of talk's return before the target can see its stdin end: a target
        // that exits at that end is still one the runtime ended, never one that ended first.
        signal_event(returned_.get());
        // The target sees its stdin end once the runtime has nothing more to say.
        to_target_.reset();
        from_target_.reset();
    }};
}

void ConversationThread::call_ended() {
    if (!ended_signalled_) {
        ended_signalled_ = true;
        signal_event(ended_.get());
    }
}

void ConversationThread::join() {
    call_ended();
    if (thread_.joinable()) {
        thread_.join();
    }
    if (thrown_) {
        std::rethrow_exception(std::exchange(thrown_, nullptr));
    }
}

}  // namespace tea::exec::detail
