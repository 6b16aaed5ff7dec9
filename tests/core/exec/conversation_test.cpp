// The runner's conversation hook (RunOptions::conversation) against real processes.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "exec/call_runner.hpp"
#include "support/temp_dir.hpp"
#include "util/fd.hpp"

namespace tea::exec {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class Conversing : public ::testing::Test {
   protected:
    ExecPlan plan(std::vector<std::string> argv) {
        ExecPlan p;
        p.argv = std::move(argv);
        p.env = {"PATH=/usr/bin:/bin"};
        p.cwd = dir_.string();
        p.confinement = "opt-out";
        return p;
    }
    RunOptions options(std::function<void(const ConversationChannel &)> talk, bool stdio = true) {
        RunOptions o;
        o.out = {dir_ / "stdout", 1 << 20, -1, nullptr};
        o.err = {dir_ / "stderr", 1 << 20, -1, nullptr};
        o.kill_grace = milliseconds{300};
        o.conversation = Conversation{stdio, std::move(talk)};
        return o;
    }
    static std::string read(const fs::path &p) {
        std::ifstream in{p, std::ios::binary};
        return {std::istreambuf_iterator<char>{in}, {}};
    }
    test::TempDir tmp_{"tea-conversation"};
    const fs::path &dir_ = tmp_.path();
};

bool readable_within(int fd, milliseconds bound) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(bound.count())) == 1 && (p.revents & POLLIN) != 0;
}

// One line from fd, waiting at most `bound` for each byte.
std::string read_line(int fd, milliseconds bound) {
    std::string line;
    char c = 0;
    while (readable_within(fd, bound) && ::read(fd, &c, 1) == 1 && c != '\n') {
        line += c;
    }
    return line;
}

// A server that exits the moment its stdin ends (as an MCP server reading lines does) was still
// ended by the runtime: talk's return is known before the server can see that end.
TEST_F(Conversing, AServerThatExitsAtItsStdinsEndWasEndedByTheRuntime) {
    // Busy threads make the talk's thread lose its CPU between the pipes' close and its signal,
    // where the race lay, as a loaded machine does.
    std::atomic<bool> stop{false};
    std::vector<std::thread> busy;
    for (unsigned i = 0; i < std::max(2U, std::thread::hardware_concurrency()); ++i) {
        busy.emplace_back([&stop] {
            while (!stop.load(std::memory_order_relaxed)) {
            }
        });
    }
    struct Joiner {
        std::atomic<bool> &stop;
        std::vector<std::thread> &threads;
        ~Joiner() {
            stop = true;
            for (auto &t : threads) t.join();
        }
    } joiner{stop, busy};
    for (int i = 0; i < 200; ++i) {
        fs::remove(dir_ / "stderr");
        const auto r = run_call(plan({"sh", "-c", "read l; echo \"got $l\"; cat >/dev/null"}),
                                options([&](const ConversationChannel &c) {
                                    ASSERT_EQ(::write(c.to_target, "hi\n", 3), 3);
                                    (void)read_line(c.from_target, milliseconds{10000});
                                }));
        ASSERT_TRUE(r.started) << r.start_error;
        ASSERT_TRUE(r.ended_by_runtime) << "round " << i;
        EXPECT_EQ(r.signal == 0 ? r.exit_code : -r.signal, r.signal == 0 ? 0 : -SIGTERM);
    }
}

TEST_F(Conversing, TheTargetsStdioIsTheTalksAndItsReturnEndsTheCall) {
    std::string answer;
    const auto start = std::chrono::steady_clock::now();
    // A server that answers one line and then keeps running, as a tool server does.
    const auto r = run_call(plan({"sh", "-c", "echo err >&2; read l; echo \"got $l\"; sleep 30"}),
                            options([&](const ConversationChannel &c) {
                                ASSERT_EQ(::write(c.to_target, "hello\n", 6), 6);
                                answer = read_line(c.from_target, milliseconds{10000});
                            }));
    ASSERT_TRUE(r.started) << r.start_error;
    EXPECT_EQ(answer, "got hello");
    EXPECT_TRUE(r.ended_by_runtime);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.signal, SIGTERM);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds{10});
    EXPECT_EQ(read(dir_ / "stderr"), "err\n") << "stderr is captured as always";
    EXPECT_FALSE(fs::exists(dir_ / "stdout")) << "the out capture is not used";
}

TEST_F(Conversing, TheTargetsOwnExitMakesCallEndedReadable) {
    std::atomic<bool> saw_end{false};
    pid_t talked_to = -1;
    const auto r =
        run_call(plan({"sh", "-c", "exit 3"}), options([&](const ConversationChannel &c) {
                     talked_to = c.pid;
                     saw_end = readable_within(c.call_ended, milliseconds{10000});
                 }));
    ASSERT_TRUE(r.started) << r.start_error;
    EXPECT_TRUE(saw_end);
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_FALSE(r.ended_by_runtime) << "the target ended first";
    EXPECT_GT(talked_to, 0);
}

TEST_F(Conversing, TheTimeoutMakesCallEndedReadable) {
    std::atomic<bool> saw_end{false};
    auto o = options([&](const ConversationChannel &c) {
        saw_end = readable_within(c.call_ended, milliseconds{10000});
    });
    o.timeout = milliseconds{200};
    const auto r = run_call(plan({"sleep", "30"}), o);
    EXPECT_TRUE(saw_end);
    EXPECT_TRUE(r.timed_out);
    EXPECT_FALSE(r.ended_by_runtime);
}

TEST_F(Conversing, TheRuntimesSignalMakesCallEndedReadable) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &set, nullptr), 0);
    const UniqueFd sfd{::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)};
    std::atomic<bool> saw_end{false};
    auto o = options([&](const ConversationChannel &c) {
        ::kill(::getpid(), SIGUSR1);
        saw_end = readable_within(c.call_ended, milliseconds{10000});
    });
    o.signal_fd = sfd.get();
    const auto r = run_call(plan({"sleep", "30"}), o);
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    EXPECT_EQ(r.interrupted_by, SIGUSR1);
    EXPECT_TRUE(saw_end);
    EXPECT_FALSE(r.ended_by_runtime);
}

TEST_F(Conversing, TheTalksThreadIsJoinedBeforeTheCallReturns) {
    std::atomic<bool> finished{false};
    (void)run_call(plan({"true"}), options([&](const ConversationChannel &c) {
                       (void)readable_within(c.call_ended, milliseconds{10000});
                       std::this_thread::sleep_for(milliseconds{200});
                       finished = true;
                   }));
    EXPECT_TRUE(finished);
}

TEST_F(Conversing, WhatTalkThrowsIsThrownOnceTheCallHasEnded) {
    const auto pid_file = dir_ / "pid";
    EXPECT_THROW((void)run_call(plan({"sh", "-c", "echo $$ > " + pid_file.string() + "; sleep 30"}),
                                options([](const ConversationChannel &) {
                                    std::this_thread::sleep_for(milliseconds{100});
                                    throw std::runtime_error{"talk failed"};
                                })),
                 std::runtime_error);
    std::ifstream in{pid_file};
    pid_t pid = -1;
    in >> pid;
    ASSERT_GT(pid, 0);
    EXPECT_EQ(::kill(pid, 0), -1) << "the call was ended and reaped before the throw";
}

TEST_F(Conversing, ANonStdioConversationLeavesTheStreamsAsTheyAre) {
    int to_target = 0;
    const auto r = run_call(plan({"sh", "-c", "echo out"}),
                            options(
                                [&](const ConversationChannel &c) {
                                    to_target = c.to_target;
                                    (void)readable_within(c.call_ended, milliseconds{10000});
                                },
                                false));
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(to_target, -1);
    EXPECT_EQ(read(dir_ / "stdout"), "out\n");
}

TEST_F(Conversing, AStagedCallTalksOnceItIsFinished) {
    std::atomic<bool> talked_before_finish{false};
    std::atomic<bool> finishing{false};
    std::string answer;
    auto staged = plan({"sh", "-c", "cat <&8 >/dev/null; read l; echo \"got $l\"; sleep 30"});
    auto complete = staged;
    staged.files = {{8, {}, {}, true}};
    complete.files = {{8, "content", {}}};
    StartedCall call{staged, options([&](const ConversationChannel &c) {
                         talked_before_finish = !finishing;
                         (void)::write(c.to_target, "x\n", 2);
                         answer = read_line(c.from_target, milliseconds{10000});
                     })};
    std::this_thread::sleep_for(milliseconds{100});
    finishing = true;
    const auto r = call.finish(complete);
    EXPECT_FALSE(talked_before_finish);
    EXPECT_EQ(answer, "got x");
    EXPECT_TRUE(r.ended_by_runtime);
}

}  // namespace
}  // namespace tea::exec
