// Throughput of the log-stream observer's ndjson parser on one core.
//
//   logstream_parser_bench [--mb N] [--runs R]
//
// Builds about N MB (default 200) of ndjson by repeating the recorded corpus's whole lines
// (tests/plugins/observer-logstream/corpus: sandbox reports, a loss event, an overload notice,
// other senders' events; the cut and non-JSON lines left out, as a healthy log holds none), then
// audits it R times (default 7) the way collect does (audit_log: every line parsed, the call's
// reports merged), each run interleaved with a pass that only finds the line ends, the floor any
// line parser pays. Prints the median of each in MB/s, by the thread's CPU time and by wall time.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "log_audit.hpp"
#include "log_parser.hpp"

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Timing {
    double cpu = 0;
    double wall = 0;
};

template <class Fn>
Timing timed(Fn &&fn) {
    const auto wall_start = std::chrono::steady_clock::now();
    const auto cpu_start = thread_cpu_seconds();
    fn();
    return {thread_cpu_seconds() - cpu_start,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count()};
}

}  // namespace

int main(int argc, char **argv) {
    std::size_t megabytes = 200;
    int runs = 7;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view flag = argv[i];
        if (flag == "--mb") {
            megabytes = std::strtoull(argv[i + 1], nullptr, 10);
        } else if (flag == "--runs") {
            runs = std::atoi(argv[i + 1]);
        } else {
            std::fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (megabytes == 0 || runs <= 0) {
        std::fprintf(stderr, "--mb and --runs must be positive\n");
        return 2;
    }
    std::ifstream in{std::string{TEA_LOGSTREAM_CORPUS_DIR} + "/recorded.ndjson"};
    std::string unit;
    for (std::string line; std::getline(in, line);) {
        const auto kind = tea::logstream::parse_log_line(line).kind;
        if (kind != tea::logstream::LineKind::malformed) {
            unit += line;
            unit += '\n';
        }
    }
    if (unit.empty()) {
        std::fprintf(stderr, "the corpus holds no whole line\n");
        return 1;
    }
    std::string text;
    text.reserve(megabytes * 1000000 + unit.size());
    while (text.size() < megabytes * 1000000) {
        text += unit;
    }
    const std::vector<tea::logstream::Canary> canaries{{"/t/canary-0"}, {"/t/canary-1"}};
    const double mb = static_cast<double>(text.size()) / 1e6;
    std::vector<double> floor_cpu, floor_wall, parse_cpu, parse_wall;
    std::size_t sink = 0;
    for (int r = 0; r < runs; ++r) {
        const auto f = timed([&] {
            for (auto at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1)) {
                ++sink;
            }
        });
        floor_cpu.push_back(mb / f.cpu);
        floor_wall.push_back(mb / f.wall);
        const auto p =
            timed([&] { sink += tea::logstream::audit_log(text, canaries).events.size(); });
        parse_cpu.push_back(mb / p.cpu);
        parse_wall.push_back(mb / p.wall);
    }
    std::printf("%.0f MB of ndjson (%zu-byte unit of %zu lines), %d runs (sink %zu)\n", mb,
                unit.size(), static_cast<std::size_t>(std::count(unit.begin(), unit.end(), '\n')),
                runs, sink % 10);
    std::printf("line ends only   %8.0f MB/s cpu  %8.0f MB/s wall\n", median(floor_cpu),
                median(floor_wall));
    std::printf("audit_log        %8.0f MB/s cpu  %8.0f MB/s wall\n", median(parse_cpu),
                median(parse_wall));
    return 0;
}
