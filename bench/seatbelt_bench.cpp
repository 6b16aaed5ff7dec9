// The Seatbelt backend's prepare for a call with G grants, on one core.
//
//   seatbelt_bench [--grants G] [--rounds R] [--calls N] [--nested 1]
//
// Three variants, interleaved in each of R rounds (default 15) of N calls each (default 2000):
//   bare      the launch spec decoded and a plan that copies it encoded: what any backend's
//             prepare pays for the documents alone (the opt-out backend's work);
//   profile   the profile alone, from a request with G grants (default 100: G/2 systemPaths,
//             G/4 read-only grants, G/4 withheld paths; with --nested 1 the withheld paths lie
//             three levels down in the workspace, so each pins the directories above it);
//   prepare   the whole prepare: the spec decoded, checked, the profile and the plan encoded.
// Prints the median microseconds per call of each, and prepare's cost beyond bare.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <tea/documents.hpp>
#include <vector>

#include "profile.hpp"
#include "seatbelt_plan.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

tea::documents::LaunchSpec spec_with(std::size_t grants, bool nested) {
    tea::documents::LaunchSpec spec;
    spec.argv = {"/usr/bin/make", "test"};
    spec.env = {"PATH=/usr/bin:/bin", "LANG=en_US.UTF-8", "TERM=xterm-256color"};
    const std::string run = "/Users/dev/.local/state/tea-evaluate/run-1";
    spec.workspace = run + "/workspace-1";
    spec.cwd = spec.workspace;
    spec.temp_dir = run + "/tmp-1";
    spec.home = run + "/tea-evaluate-target-home-abcdefgh";
    for (std::size_t i = 0; i < grants / 2; ++i) {
        spec.system_paths.push_back("/opt/toolchains/tool-" + std::to_string(i) + "/share");
    }
    for (std::size_t i = 0; i < grants / 4; ++i) {
        spec.read_only.push_back(run + "/repository-" + std::to_string(i));
        spec.withhold.push_back(nested ? spec.workspace + "/p" + std::to_string(i) + "/sub/.tea"
                                       : "/Users/dev/projects/p" + std::to_string(i) + "/.tea");
    }
    spec.runtime_prefix = "/usr/local";
    return spec;
}

double thread_cpu_micros() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

struct PerCall {
    double cpu = 0;   // microseconds of this thread's CPU time
    double wall = 0;  // microseconds of wall time
};

// By CPU time too, so a machine busy with other work still shows what one core spends.
template <class Fn>
PerCall micros_per_call(std::size_t calls, Fn &&fn) {
    const auto start = Clock::now();
    const auto cpu_start = thread_cpu_micros();
    for (std::size_t i = 0; i < calls; ++i) {
        fn();
    }
    const auto n = static_cast<double>(calls);
    return {(thread_cpu_micros() - cpu_start) / n,
            std::chrono::duration<double, std::micro>(Clock::now() - start).count() / n};
}

int run(int argc, char **argv) {
    std::size_t grants = 100;
    int rounds = 15;
    std::size_t calls = 2000;
    bool nested = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view flag = argv[i];
        const auto value = std::strtoull(argv[i + 1], nullptr, 10);
        if (flag == "--grants") {
            grants = value;
        } else if (flag == "--rounds") {
            rounds = static_cast<int>(value);
        } else if (flag == "--calls") {
            calls = value;
        } else if (flag == "--nested") {
            nested = value != 0;
        } else {
            std::fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (rounds <= 0 || calls == 0) {
        std::fprintf(stderr, "--rounds and --calls must be positive\n");
        return 2;
    }
    const auto spec = spec_with(grants, nested);
    const std::string spec_json = tea::documents::encode(spec);
    tea::seatbelt::ProfileRequest request;
    request.workspace = spec.workspace;
    request.temp_dir = spec.temp_dir;
    request.home = spec.home;
    request.run_dir = "/Users/dev/.local/state/tea-evaluate/run-1";
    request.private_root = "/Users/dev/.local/state/tea-evaluate";
    request.withhold = spec.withhold;
    request.read_only = spec.read_only;
    request.system_paths = spec.system_paths;
    request.runtime_prefix = spec.runtime_prefix;

    std::size_t sink = 0;  // keeps each result alive, so no variant is optimised away
    std::vector<PerCall> bare;
    std::vector<PerCall> profile;
    std::vector<PerCall> prepare;
    const tea::seatbelt::Settings settings;
    for (int r = 0; r < rounds; ++r) {
        bare.push_back(micros_per_call(calls, [&] {
            const auto s = tea::documents::decode_launch_spec(spec_json);
            tea::documents::ExecPlan plan;
            plan.argv = s.argv;
            plan.env = s.env;
            plan.cwd = s.cwd;
            plan.confinement = "opt-out";
            sink += tea::documents::encode(plan).size();
        }));
        profile.push_back(
            micros_per_call(calls, [&] { sink += tea::seatbelt::target_profile(request).size(); }));
        prepare.push_back(micros_per_call(calls, [&] {
            const auto s = tea::documents::decode_launch_spec(spec_json);
            sink += tea::documents::encode(tea::seatbelt::seatbelt_plan(settings, s)).size();
        }));
    }
    const auto profile_bytes = tea::seatbelt::target_profile(request).size();
    std::printf("grants %zu (profile %zu bytes), %d rounds of %zu calls (sink %zu)\n", grants,
                profile_bytes, rounds, calls, sink % 10);
    const auto cpu = [](const std::vector<PerCall> &v) {
        std::vector<double> out;
        out.reserve(v.size());
        for (const auto &p : v) {
            out.push_back(p.cpu);
        }
        return median(out);
    };
    const auto wall = [](const std::vector<PerCall> &v) {
        std::vector<double> out;
        out.reserve(v.size());
        for (const auto &p : v) {
            out.push_back(p.wall);
        }
        return median(out);
    };
    std::printf("medians, us/call        cpu      wall\n");
    std::printf("bare (documents only) %7.1f  %8.1f\n", cpu(bare), wall(bare));
    std::printf("profile alone         %7.1f  %8.1f\n", cpu(profile), wall(profile));
    std::printf("prepare (whole)       %7.1f  %8.1f   (+%.1f us cpu over bare)\n", cpu(prepare),
                wall(prepare), cpu(prepare) - cpu(bare));
    return 0;
}
}  // namespace

int main(int argc, char **argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        (void)std::fprintf(stderr, "seatbelt_bench: %s\n", e.what());
        return 1;
    }
}
