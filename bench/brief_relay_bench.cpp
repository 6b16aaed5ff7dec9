// What one turn of the sealed-brief relay (evaluation/brief_relay.hpp) costs over a bare pipe
// round trip to the same target.
//
//   brief_relay_bench [--rounds R]
//
// The target is bench_relay_echo_target, which answers every line at once, and the agent is a
// callback that answers at once, so only the relay is timed: its JSON line out, the target's line
// in, its parse and the turn's record. Each round runs, interleaved, the target started directly
// (posix_spawn, two pipes) and sent 64 protocol lines one at a time, each one's round trip timed;
// and the target started by exec::run_call (no confinement) with the relay's conversation for
// 64 turns, each turn timed from one agent callback to the next. Prints over R rounds (default
// 15) the median of a turn for both, and the difference.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_support.hpp"
#include "evaluation/brief_relay.hpp"
#include "exec/call_runner.hpp"
#include "piped_child.hpp"
#include "util/fd.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using tea::bench::median;
constexpr int kTurns = tea::evaluation::kMaxConversationTurns;
constexpr std::string_view kLine = "{\"role\":\"user\",\"text\":\"I was charged twice.\"}\n";

double ms_between(Clock::time_point start, Clock::time_point end) {
    return std::chrono::duration<double, std::milli>(end - start).count();
}

// One line written and one read, by plain blocking calls in whole chunks (as the relay reads).
void round_trip(int to, int from) {
    if (::write(to, kLine.data(), kLine.size()) != static_cast<ssize_t>(kLine.size())) {
        std::fprintf(stderr, "the target did not take the line\n");
        std::exit(1);
    }
    std::array<char, 4096> chunk{};
    for (;;) {
        const ssize_t n = ::read(from, chunk.data(), chunk.size());
        if (n <= 0) {
            std::fprintf(stderr, "the target did not answer\n");
            std::exit(1);
        }
        if (chunk[static_cast<std::size_t>(n) - 1] == '\n') return;
    }
}

void direct(std::vector<double> &turns) {
    auto child = tea::bench::spawn_on_pipes(TEA_BENCH_RELAY_TARGET);
    for (int i = 0; i < kTurns; ++i) {
        const auto start = Clock::now();
        round_trip(child.stdin_w.get(), child.stdout_r.get());
        turns.push_back(ms_between(start, Clock::now()));
    }
    child.stdin_w.reset();  // its stdin ends: it exits
    ::waitpid(child.pid, nullptr, 0);
}

void through_relay(const std::string &dir, std::vector<double> &turns) {
    tea::evaluation::ConversationProbe probe;
    probe.brief_path = "brief.md";
    probe.brief = "bench";
    probe.max_turns = kTurns;
    probe.turn_timeout_ms = 10000;
    std::optional<Clock::time_point> last;
    tea::evaluation::BriefRelay relay{
        probe, [&](const std::optional<std::string> &, std::chrono::milliseconds) {
            const auto now = Clock::now();
            if (last) turns.push_back(ms_between(*last, now));
            last = now;
            return tea::evaluation::AgentMessage{true, "I was charged twice.", {}};
        }};
    tea::exec::ExecPlan plan;
    plan.argv = {TEA_BENCH_RELAY_TARGET};
    plan.env = {"PATH=/usr/bin:/bin"};
    plan.cwd = dir;
    plan.confinement = "opt-out";
    tea::exec::RunOptions options;
    options.err = {dir + "/stderr", 1 << 20, -1, nullptr};
    std::filesystem::remove(options.err.file);
    options.conversation = relay.conversation();
    const auto result = tea::exec::run_call(plan, options);
    if (!result.started || relay.ended() != tea::evaluation::RelayEnd::max_turns) {
        std::fprintf(stderr, "the relay did not hold its %d turns: %s\n", kTurns,
                     relay.record("")["detail"].dump().c_str());
        std::exit(1);
    }
}

}  // namespace

int main(int argc, char **argv) {
    int rounds = 15;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::string{argv[i]} == "--rounds") rounds = std::atoi(argv[i + 1]);
    }
    return tea::bench::run_guarded("brief_relay_bench", [&] {
        const auto dir = tea::bench::scratch_dir("tea-brief-relay-bench");
        std::vector<double> bare;
        std::vector<double> relayed;
        std::vector<double> unused;
        direct(unused);  // warm-up, not counted
        through_relay(dir, unused);
        for (int r = 0; r < rounds; ++r) {
            direct(bare);
            through_relay(dir, relayed);
        }
        const double b = median(bare);
        const double t = median(relayed);
        std::printf("brief_relay_bench: %d rounds, %d turns a round\n", rounds, kTurns);
        std::printf("%-28s %10s %10s %10s\n", "", "bare pipe", "relay", "added");
        std::printf("%-28s %10.4f %10.4f %10.4f\n", "one turn (ms, median)", b, t, t - b);
        return 0;
    });
}
