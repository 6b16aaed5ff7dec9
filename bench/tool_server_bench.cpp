// What a tool-server round trip costs through the runner's conversation hook
// (exec::RunOptions::conversation) over the same server on pipes the bench makes itself.
//
//   tool_server_bench [--rounds R] [--requests K]
//
// The server is bench_mcp_echo_server, which answers every request at once, so only the transport
// is timed. Each round runs, interleaved, the server started directly (posix_spawn, two pipes) and
// the server started by exec::run_call (no confinement) with a stdio conversation; each does the
// handshake and K requests (default 200) through services::McpClient. Prints over R rounds
// (default 15) the median round trip of one request, and the median of a whole probe (start,
// handshake, one request, the server's end), for both, and their differences.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "exec/call_runner.hpp"
#include "piped_child.hpp"
#include "services/mcp_client.hpp"
#include "util/fd.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using tea::bench::median;
constexpr std::chrono::milliseconds kTimeout{10000};

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The handshake, then `requests` requests, each one's round trip appended to `trips`; exits the
// bench when the server answers wrong, since that variant would measure nothing.
void converse(tea::UniqueFd to_server, tea::UniqueFd from_server, int requests,
              std::vector<double> &trips) {
    tea::services::McpClient client{std::move(to_server), std::move(from_server)};
    if (client.initialize(kTimeout).outcome != tea::services::McpOutcome::result) {
        std::fprintf(stderr, "the server did not answer the handshake\n");
        std::exit(1);
    }
    for (int i = 0; i < requests; ++i) {
        const auto start = Clock::now();
        if (client.request("tools/list", nlohmann::json::object(), kTimeout).outcome !=
            tea::services::McpOutcome::result) {
            std::fprintf(stderr, "the server did not answer a request\n");
            std::exit(1);
        }
        trips.push_back(ms_since(start));
    }
}

// The server on pipes of the bench's own: the whole probe's milliseconds.
double direct(int requests, std::vector<double> &trips) {
    const auto start = Clock::now();
    auto child = tea::bench::spawn_on_pipes(TEA_BENCH_MCP_SERVER);
    // Closes its stdin: it ends.
    converse(std::move(child.stdin_w), std::move(child.stdout_r), requests, trips);
    ::waitpid(child.pid, nullptr, 0);
    return ms_since(start);
}

// The same server started by the runner, the conversation on its hook: the whole probe's
// milliseconds.
double through_runner(const std::string &dir, int requests, std::vector<double> &trips) {
    tea::exec::ExecPlan plan;
    plan.argv = {TEA_BENCH_MCP_SERVER};
    plan.env = {"PATH=/usr/bin:/bin"};
    plan.cwd = dir;
    plan.confinement = "opt-out";
    tea::exec::RunOptions options;
    options.err = {dir + "/stderr", 1 << 20, -1, nullptr};
    std::filesystem::remove(options.err.file);
    options.conversation = tea::exec::Conversation{
        true, [&](const tea::exec::ConversationChannel &c) {
            converse(tea::UniqueFd{::fcntl(c.to_target, F_DUPFD_CLOEXEC, 0)},
                     tea::UniqueFd{::fcntl(c.from_target, F_DUPFD_CLOEXEC, 0)}, requests, trips);
        }};
    const auto start = Clock::now();
    const auto result = tea::exec::run_call(plan, options);
    const double ms = ms_since(start);
    if (!result.started) {
        std::fprintf(stderr, "the runner did not start the server: %s\n",
                     result.start_error.c_str());
        std::exit(1);
    }
    return ms;
}

}  // namespace

int main(int argc, char **argv) {
    int rounds = 15;
    int requests = 200;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--rounds") {
            rounds = std::atoi(argv[i + 1]);
        } else if (flag == "--requests") {
            requests = std::atoi(argv[i + 1]);
        }
    }
    return tea::bench::run_guarded("tool_server_bench", [&] {
        const auto dir = tea::bench::scratch_dir("tea-tool-server-bench");
        std::vector<double> direct_trips;
        std::vector<double> runner_trips;
        std::vector<double> direct_probe;
        std::vector<double> runner_probe;
        std::vector<double> unused;
        (void)direct(requests, unused);  // warm-up, not counted
        (void)through_runner(dir, requests, unused);
        for (int r = 0; r < rounds; ++r) {
            // Requests and whole probes (one request each) alternate between the two variants.
            (void)direct(requests, direct_trips);
            (void)through_runner(dir, requests, runner_trips);
            unused.clear();
            direct_probe.push_back(direct(1, unused));
            runner_probe.push_back(through_runner(dir, 1, unused));
        }
        const double dt = median(direct_trips);
        const double rt = median(runner_trips);
        const double dp = median(direct_probe);
        const double rp = median(runner_probe);
        std::printf("tool_server_bench: %d rounds, %d requests a round\n", rounds, requests);
        std::printf("%-34s %10s %10s %10s\n", "", "direct", "runner", "added");
        std::printf("%-34s %10.4f %10.4f %10.4f\n", "one request's round trip (ms)", dt, rt,
                    rt - dt);
        std::printf("%-34s %10.3f %10.3f %10.3f\n", "a probe: start to end (ms)", dp, rp, rp - dp);
        return 0;
    });
}
