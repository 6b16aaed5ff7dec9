// Throughput of the strace trace parser on one core.
//
//   strace_parser_bench [--mb N] [--runs R] [--chunk BYTES] [--corpus DIR]
//
// Builds about N MB (default 200) of trace text by repeating the recorded corpus, then parses it
// R times (default 7) in pieces of BYTES (default 64 KiB, what a reader of strace's output file
// gets per read). Each parse is interleaved with a pass that only finds the line ends, the floor
// any line parser pays, so both see the same machine state. Prints the median of each in MB/s,
// by the thread's CPU time (what one core delivers, even on a busy machine) and by wall time.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "strace_parser.hpp"

namespace {

std::string read_file(const std::filesystem::path &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char **argv) {
    std::size_t megabytes = 200;
    int runs = 7;
    std::size_t chunk = 64 * 1024;
    std::filesystem::path corpus_dir = TEA_STRACE_CORPUS_DIR;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view flag = argv[i];
        const char *value = argv[i + 1];
        if (flag == "--mb") {
            megabytes = std::strtoull(value, nullptr, 10);
        } else if (flag == "--runs") {
            runs = std::atoi(value);
        } else if (flag == "--chunk") {
            chunk = std::strtoull(value, nullptr, 10);
        } else if (flag == "--corpus") {
            corpus_dir = value;
        } else {
            std::fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (megabytes == 0 || runs <= 0 || chunk == 0) {
        std::fprintf(stderr, "--mb, --runs and --chunk must be positive\n");
        return 2;
    }

    // Every complete trace of the corpus; the one cut mid-line would glue two lines together.
    std::vector<std::filesystem::path> files;
    for (const auto &entry : std::filesystem::directory_iterator(corpus_dir)) {
        const auto &path = entry.path();
        if (path.extension() == ".trace" && path.stem() != "truncated") files.push_back(path);
    }
    std::sort(files.begin(), files.end());
    std::string unit;
    for (const auto &path : files) unit += read_file(path);
    if (unit.empty()) {
        std::fprintf(stderr, "no corpus traces in %s\n", corpus_dir.c_str());
        return 1;
    }
    std::string text;
    text.reserve(megabytes * 1024 * 1024 + unit.size());
    while (text.size() < megabytes * 1024 * 1024) text += unit;
    const double mb = static_cast<double>(text.size()) / (1024.0 * 1024.0);

    std::vector<double> parser_rates;
    std::vector<double> parser_wall_rates;
    std::vector<double> floor_rates;
    std::uint64_t events = 0;
    std::uint64_t lines = 0;
    bool lossy = false;
    for (int run = 0; run < runs; ++run) {
        {
            auto start = std::chrono::steady_clock::now();
            std::size_t newlines = 0;
            for (std::size_t pos = 0; pos < text.size();) {
                const std::size_t left = text.size() - pos;
                const void *nl = std::memchr(text.data() + pos, '\n', left);
                if (nl == nullptr) break;
                ++newlines;
                pos = static_cast<std::size_t>(static_cast<const char *>(nl) - text.data()) + 1;
            }
            floor_rates.push_back(mb / seconds_since(start));
            lines = newlines;
        }
        {
            std::uint64_t seen = 0;
            const tea::strace::EventSink sink = [&seen](const tea::strace::AccessEvent &e) {
                if (!e.path_resolved.empty()) ++seen;
            };
            const auto start = std::chrono::steady_clock::now();
            const double cpu_start = thread_cpu_seconds();
            tea::strace::Parser parser("/tmp/tea-strace-corpus");
            const std::string_view view(text);
            for (std::size_t pos = 0; pos < view.size(); pos += chunk) {
                parser.feed(view.substr(pos, chunk), sink);
            }
            parser.finish(sink);
            parser_rates.push_back(mb / (thread_cpu_seconds() - cpu_start));
            parser_wall_rates.push_back(mb / seconds_since(start));
            events = parser.events();
            lossy = parser.lossy();
            if (lossy && run == 0) {
                std::fprintf(stderr, "lossy: %s\n", parser.lossy_reason().c_str());
            }
        }
    }
    std::printf("trace: %.1f MB, %llu lines, %llu events per parse, %zu corpus files, chunk %zu\n",
                mb, static_cast<unsigned long long>(lines), static_cast<unsigned long long>(events),
                files.size(), chunk);
    std::printf("line-end floor (memchr): median %.0f MB/s over %d runs\n", median(floor_rates),
                runs);
    std::printf(
        "parser, CPU time:        median %.0f MB/s over %d runs (min %.0f, max %.0f)%s\n",
        median(parser_rates), runs, *std::min_element(parser_rates.begin(), parser_rates.end()),
        *std::max_element(parser_rates.begin(), parser_rates.end()), lossy ? " [lossy]" : "");
    std::printf("parser, wall time:       median %.0f MB/s\n", median(parser_wall_rates));
    return 0;
}
