// What a confined call costs: `tea-evaluate exec` (the whole process: start,
// configuration, plugin loading, socket scan, directories, helper, bwrap)
// against bare execution and raw bwrap with the same namespaces, in one run,
// interleaved, reporting medians and ratios. Not a test: it asserts nothing.
// The calls are unaudited (--observer none): audit_overhead_bench measures the audit.
//
//   exec_overhead_bench [--rounds N]
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench_support.hpp"

using tea::bench::median;
using tea::bench::run_ms;

int main(int argc, char **argv) {
    int rounds = 30;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--rounds") == 0) {
            rounds = std::atoi(argv[i + 1]);
        }
    }
    const std::string tea = TEA_EVALUATE_BIN;
    const std::string helper = TEA_SANDBOX_HELPER;
    char dir_template[] = "/tmp/tea-bench-XXXXXX";
    const std::string ws = ::mkdtemp(dir_template);
    ::chmod(ws.c_str(), 0755);
    const std::string file = ws + "/data";
    {
        std::ofstream out{file};
        out << std::string(1 << 20, 'x');
    }
    const auto raw = tea::bench::raw_bwrap(helper);
    auto with = [](std::vector<std::string> base, std::initializer_list<std::string> more) {
        base.insert(base.end(), more);
        return base;
    };
    const std::vector<std::pair<std::string, std::vector<std::string>>> variants{
        {"bare true", {"true"}},
        {"raw bwrap true", with(raw, {"true"})},
        {"tea exec opt-out true", {tea, "exec", "--backend", "opt-out", "--", "true"}},
        {"tea exec true", {tea, "exec", "--observer", "none", "--", "true"}},
        {"bare cat", {"cat", file}},
        {"raw bwrap cat", with(raw, {"cat", file})},
        {"tea exec cat", {tea, "exec", "--observer", "none", "--", "cat", file}},
    };
    // Warm up, so the first round's cold caches do not count (and the backend's probe is
    // remembered).
    for (const auto &[name, cmd] : variants) {
        run_ms(cmd, ws);
    }
    std::map<std::string, std::vector<double>> times;
    for (int r = 0; r < rounds; ++r) {
        for (const auto &[name, cmd] : variants) {
            times[name].push_back(run_ms(cmd, ws));
        }
    }
    std::printf("%d interleaved rounds, workspace %s, euid %d\n", rounds, ws.c_str(), ::geteuid());
    std::printf("%-24s %10s %14s %14s\n", "variant", "median ms", "x bare", "x raw bwrap");
    for (const auto &[name, cmd] : variants) {
        const bool is_cat = name.find("cat") != std::string::npos;
        const double m = median(times[name]);
        const double bare = median(times[is_cat ? "bare cat" : "bare true"]);
        const double rawm = median(times[is_cat ? "raw bwrap cat" : "raw bwrap true"]);
        std::printf("%-24s %10.2f %14.2f %14.2f\n", name.c_str(), m, m / bare, m / rawm);
    }
    std::filesystem::remove_all(ws);
    return 0;
}
