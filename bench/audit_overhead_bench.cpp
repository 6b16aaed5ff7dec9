// What the audit costs: the audited `tea-evaluate exec` (the whole process) against the same call
// unaudited (--observer none), raw strace around raw bwrap with the options the observer uses,
// raw bwrap and bare execution, for a trivial call and for a call that opens 10,000 files, in one
// run, interleaved, reporting medians and ratios. Not a test: it asserts nothing.
//
//   audit_overhead_bench [--rounds N] [--files N]
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
#include "strace_parser.hpp"

namespace {

using tea::bench::median;
using tea::bench::run_ms;

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string> &more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
}

}  // namespace

int main(int argc, char **argv) {
    int rounds = 15;
    int files = 10000;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--rounds") == 0) {
            rounds = std::atoi(argv[i + 1]);
        } else if (std::strcmp(argv[i], "--files") == 0) {
            files = std::atoi(argv[i + 1]);
        }
    }
    const std::string tea = TEA_EVALUATE_BIN;
    const std::string helper = TEA_SANDBOX_HELPER;
    const std::string opener = TEA_OPEN_FILES;
    char dir_template[] = "/tmp/tea-audit-bench-XXXXXX";
    const std::string ws = ::mkdtemp(dir_template);
    ::chmod(ws.c_str(), 0755);
    // The files lie beside the workspace, not in it: as root the runtime lends the workspace to
    // the sandbox identity file by file, a cost of the workspace's size that is not the audit's.
    // They are declared a system path, so the audit reads them without listing 10,000 paths.
    const std::string tree = ws + "/files";
    const std::string work = ws + "/work";
    std::filesystem::create_directory(tree);
    std::filesystem::create_directory(work);
    ::chmod(tree.c_str(), 0755);
    ::chmod(work.c_str(), 0755);
    for (int i = 0; i < files; ++i) {
        std::ofstream{tree + "/f" + std::to_string(i)} << i;
    }
    const std::string trace =
        ws + "/../" + std::filesystem::path{ws}.filename().string() + ".trace";

    const auto raw = tea::bench::raw_bwrap(helper);
    const auto strace = tea::strace::strace_command("strace", trace);
    const std::vector<std::string> tea_audited{tea, "exec", "--system-path", tree, "--"};
    const std::vector<std::string> tea_unaudited{
        tea, "exec", "--observer", "none", "--system-path", tree, "--"};

    struct Workload {
        std::string name;
        std::vector<std::string> command;
    };
    const std::vector<Workload> workloads{
        {"true", {"true"}},
        {"open " + std::to_string(files), {opener, tree, std::to_string(files)}},
    };
    const std::vector<std::string> kinds{"bare", "raw bwrap", "raw strace+bwrap",
                                         "tea exec unaudited", "tea exec audited"};
    auto command_for = [&](const std::string &kind, const std::vector<std::string> &cmd) {
        if (kind == "bare") {
            return cmd;
        }
        if (kind == "raw bwrap") {
            return with(raw, cmd);
        }
        if (kind == "raw strace+bwrap") {
            return with(with(strace, raw), cmd);
        }
        if (kind == "tea exec unaudited") {
            return with(tea_unaudited, cmd);
        }
        return with(tea_audited, cmd);
    };
    // Warm up: cold caches, the backend's probe and the observer's confirmation do not count.
    for (const auto &w : workloads) {
        for (const auto &k : kinds) {
            run_ms(command_for(k, w.command), work);
        }
    }
    std::map<std::string, std::vector<double>> times;
    for (int r = 0; r < rounds; ++r) {
        for (const auto &w : workloads) {
            for (const auto &k : kinds) {
                times[w.name + "|" + k].push_back(run_ms(command_for(k, w.command), work));
            }
        }
    }
    std::printf("%d interleaved rounds, workspace %s, euid %d\n", rounds, ws.c_str(), ::geteuid());
    for (const auto &w : workloads) {
        const double bare = median(times[w.name + "|bare"]);
        const double rawb = median(times[w.name + "|raw bwrap"]);
        const double raws = median(times[w.name + "|raw strace+bwrap"]);
        const double unaudited = median(times[w.name + "|tea exec unaudited"]);
        std::printf("\n%s\n%-22s %10s %9s %11s %13s %13s\n", w.name.c_str(), "variant", "median ms",
                    "x bare", "x raw bwrap", "x raw strace", "x unaudited");
        for (const auto &k : kinds) {
            const double m = median(times[w.name + "|" + k]);
            std::printf("%-22s %10.2f %9.2f %11.2f %13.2f %13.2f\n", k.c_str(), m, m / bare,
                        m / rawb, m / raws, m / unaudited);
        }
    }
    std::filesystem::remove(trace);
    std::filesystem::remove_all(ws);
    return 0;
}
