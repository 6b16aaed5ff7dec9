// What the audit costs: the audited `tea-evaluate exec` (the whole process) against the same call
// unaudited (--observer none), raw strace around raw bwrap with the options the observer uses,
// raw bwrap and bare execution, for a trivial call, for a call that opens 10,000 files and for a
// real workload (Python's compileall of its standard library, the bytecode written into the
// workspace), in one run, interleaved, reporting medians and ratios. Not a test: it asserts
// nothing. The real workload has no raw rows: raw bwrap shows it no writable directory.
//
// With the eBPF observer built, the same call audited by it (--observer ebpf) is one more row;
// with the seccomp observer built, --observer seccomp is another.
//
// One more variant splits the difference: raw strace around raw bwrap given the very arguments
// the bubblewrap backend plans for the call (planned_call.hpp). What it costs over raw
// strace+bwrap is the confinement's own set-up, traced; what the audited call costs over it is
// the runtime's. And a floor: the same traced plan started by process_floor, a C parent with no
// work of its own that takes the plan's identity, waits and reaps as the runtime must.
//
//   audit_overhead_bench [--rounds N] [--files N]
#include <glob.h>
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
#include "planned_call.hpp"
#include "strace_parser.hpp"

namespace {

using tea::bench::median;
using tea::bench::run_ms;
using tea::bench::with;

// The Python standard library's directory (/usr/lib/python3.N), or empty without one.
std::string python_stdlib() {
    glob_t found{};
    std::string out;
    if (::glob("/usr/lib/python3.*/os.py", 0, nullptr, &found) == 0 && found.gl_pathc > 0) {
        out = std::filesystem::path{found.gl_pathv[0]}.parent_path().string();
    }
    ::globfree(&found);
    return out;
}

int run(int argc, char **argv) {
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
    const std::string floor = TEA_PROCESS_FLOOR;
    const std::string opener = TEA_OPEN_FILES;
    const std::string ws = tea::bench::scratch_dir("tea-audit-bench");
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
    // Beside the workspace, named without "..": it is removed after the workspace.
    const std::string trace = ws + ".trace";
    tea::bench::remove_at_exit(trace);

    const auto raw = tea::bench::raw_bwrap(helper);
    const auto strace = tea::strace::strace_command("strace", trace);
    const std::vector<std::string> tea_audited{tea, "exec", "--system-path", tree, "--"};
    const std::vector<std::string> tea_unaudited{
        tea, "exec", "--observer", "none", "--system-path", tree, "--"};
    const std::vector<std::string> tea_ebpf{tea,  "exec", "--observer", "ebpf", "--system-path",
                                            tree, "--"};
    const std::vector<std::string> tea_seccomp{
        tea, "exec", "--observer", "seccomp", "--system-path", tree, "--"};

    struct Workload {
        std::string name;
        std::vector<std::string> command;
        bool raw_rows = true;  // whether raw bwrap (a read-only view) can run it
    };
    std::vector<Workload> workloads{
        {"true", {"true"}},
        {"open " + std::to_string(files), {opener, tree, std::to_string(files)}},
    };
    if (const auto stdlib = python_stdlib(); !stdlib.empty()) {
        workloads.push_back({"compileall " + stdlib,
                             {"/usr/bin/env", "PYTHONPYCACHEPREFIX=" + work + "/pycache", "python3",
                              "-m", "compileall", "-q", "-f", stdlib},
                             false});
    }
    const auto is_raw = [](const std::string &kind) {
        return kind.rfind("raw ", 0) == 0 || kind.rfind("floor", 0) == 0;
    };
    std::vector<std::string> kinds{"bare",
                                   "raw bwrap",
                                   "raw strace+bwrap",
                                   "raw strace, tea's plan",
                                   "floor: strace + plan",
                                   "tea exec unaudited",
                                   "tea exec audited"};
#ifdef TEA_BENCH_EBPF
    // The eBPF observer where it is built (and loads: the bench runs as root).
    kinds.emplace_back("tea exec ebpf");
#endif
#ifdef TEA_BENCH_SECCOMP
    kinds.emplace_back("tea exec seccomp");
#endif
    // Each workload's plan, its directories where the runtime keeps a call's (removed at the end,
    // or by a later run's reclaim if this one is cut short).
    tea::files::RunDirectory run_dir{
        tea::files::open_private_root(tea::files::default_private_root())};
    std::map<std::string, tea::bench::PlannedCall> planned;
    for (const auto &w : workloads) {
        planned[w.name] = tea::bench::planned_call(tea, helper, work, run_dir, w.command, {tree});
    }
    // The floor's strace runs as the plan's identity, as the observer does: its trace file is that
    // identity's (the raw rows' strace, started as root, keeps its own).
    const std::string floor_trace = trace + ".floor";
    tea::bench::remove_at_exit(floor_trace);
    std::ofstream{floor_trace} << "";
    if (const auto &call = planned.begin()->second; call.run_as) {
        if (::chown(floor_trace.c_str(), call.uid, call.gid) != 0) {
            std::perror(floor_trace.c_str());
            return 1;
        }
    }
    const auto floor_strace = tea::strace::strace_command("strace", floor_trace);
    auto command_for = [&](const std::string &kind, const Workload &w) {
        if (kind == "bare") {
            return w.command;
        }
        if (kind == "raw bwrap") {
            return with(raw, w.command);
        }
        if (kind == "raw strace+bwrap") {
            return with(with(strace, raw), w.command);
        }
        if (kind == "raw strace, tea's plan") {
            return with(strace, planned[w.name].argv);
        }
        if (kind == "floor: strace + plan") {
            return tea::bench::floor_argv(floor, planned[w.name], {}, floor_strace);
        }
        if (kind == "tea exec unaudited") {
            return with(tea_unaudited, w.command);
        }
        if (kind == "tea exec ebpf") {
            return with(tea_ebpf, w.command);
        }
        if (kind == "tea exec seccomp") {
            return with(tea_seccomp, w.command);
        }
        return with(tea_audited, w.command);
    };
    auto files_for = [&](const std::string &kind, const Workload &w) {
        return kind == "raw strace, tea's plan" || kind == "floor: strace + plan"
                   ? planned[w.name].files
                   : tea::bench::OpenFiles{};
    };
    const auto pressure_before = tea::bench::cpu_pressure();
    // Warm up: cold caches, the backend's probe and the observer's confirmation do not count.
    for (const auto &w : workloads) {
        for (const auto &k : kinds) {
            if (w.raw_rows || !is_raw(k)) {
                run_ms(command_for(k, w), work, files_for(k, w));
            }
        }
    }
    std::map<std::string, std::vector<double>> times;
    for (int r = 0; r < rounds; ++r) {
        for (const auto &w : workloads) {
            for (const auto &k : kinds) {
                if (w.raw_rows || !is_raw(k)) {
                    times[w.name + "|" + k].push_back(
                        run_ms(command_for(k, w), work, files_for(k, w)));
                }
            }
        }
    }
    std::printf("%d interleaved rounds, workspace %s, euid %d\n", rounds, ws.c_str(), ::geteuid());
    std::printf("cpu pressure before: %s\ncpu pressure after:  %s\n", pressure_before.c_str(),
                tea::bench::cpu_pressure().c_str());
    for (const auto &w : workloads) {
        const double bare = median(times[w.name + "|bare"]);
        const double rawb = w.raw_rows ? median(times[w.name + "|raw bwrap"]) : 0.0;
        const double raws = w.raw_rows ? median(times[w.name + "|raw strace+bwrap"]) : 0.0;
        const double unaudited = median(times[w.name + "|tea exec unaudited"]);
        std::printf("\n%s\n%-24s %10s %9s %11s %13s %13s\n", w.name.c_str(), "variant", "median ms",
                    "x bare", "x raw bwrap", "x raw strace", "x unaudited");
        for (const auto &k : kinds) {
            if (!w.raw_rows && is_raw(k)) {
                continue;
            }
            const double m = median(times[w.name + "|" + k]);
            if (w.raw_rows) {
                std::printf("%-24s %10.2f %9.2f %11.2f %13.2f %13.2f\n", k.c_str(), m, m / bare,
                            m / rawb, m / raws, m / unaudited);
            } else {
                std::printf("%-24s %10.2f %9.2f %11s %13s %13.2f\n", k.c_str(), m, m / bare, "-",
                            "-", m / unaudited);
            }
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    return tea::bench::run_guarded("audit_overhead_bench", [&] { return run(argc, argv); });
}
