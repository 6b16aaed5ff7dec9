// What a confined call costs: `tea-evaluate exec` (the whole process: start,
// configuration, plugin loading, socket scan, directories, helper, bwrap)
// against bare execution and raw bwrap with the same namespaces, in one run,
// interleaved, reporting medians and ratios. Not a test: it asserts nothing.
// The calls are unaudited (--observer none): audit_overhead_bench measures the audit.
//
// One more variant splits the difference: raw bwrap given the very arguments the bubblewrap
// backend plans for this call (its covers, binds, environment and seccomp program, through the
// same descriptors), started the way the raw baseline is. What it costs over raw bwrap is the
// confinement's own; what `tea-evaluate exec` costs over it is the runtime's.
//
// Raw bwrap is also started by process_floor alone (no plan), which waits for the sandbox's init as
// well: what the promise that nothing of a call outlives it costs even without the runtime's view.
//
// Two more put a floor under the runtime's part: the same plan started by process_floor, a C
// parent with no work of its own that waits for the call and reaps what it left, as the runtime
// must; and the same again making and removing the call's three directories around it. What a
// runtime that stays around the call cannot avoid, before any configuration, plugin or plan.
//
// And `tea-evaluate exec` without budgets ([budgets] memory and processes 0): what the call's own
// cgroups cost (docs/confinement.md, "Budgets").
//
// With --workspace-sizes it measures one thing instead: `tea-evaluate exec --observer none -- true`
// in workspaces of 0, 10,000 and 100,000 files (in folders of 1,000, under $HOME), interleaved,
// each against the empty one. As root, a call lends its workspace to the sandbox identity, so
// what that costs shows here; with --compare, OTHER's calls are timed in the same rounds.
//
//   exec_overhead_bench [--rounds N] [--compare OTHER] [--workspace-sizes]
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_support.hpp"
#include "files/private_dirs.hpp"
#include "planned_call.hpp"

using tea::bench::median;
using tea::bench::run_ms;
using tea::bench::with;

namespace {

// A workspace of `files` empty files in folders of 1,000, under `base`.
std::string workspace_of(const std::string &base, int files) {
    const auto ws = base + "/ws-" + std::to_string(files);
    std::filesystem::create_directory(ws);
    ::chmod(ws.c_str(), 0755);
    for (int i = 0; i < files; ++i) {
        const auto dir = ws + "/d" + std::to_string(i / 1000);
        if (i % 1000 == 0) {
            std::filesystem::create_directory(dir);
        }
        std::ofstream{dir + "/f" + std::to_string(i)};
    }
    return ws;
}

int workspace_sizes(int rounds, const std::string &other) {
    const char *home = std::getenv("HOME");  // NOLINT(concurrency-mt-unsafe)
    const std::string base =
        tea::bench::scratch_dir("tea-bench-sizes", home != nullptr ? home : "/");
    std::vector<std::pair<std::string, std::string>> builds{{"tea", TEA_EVALUATE_BIN}};
    if (!other.empty()) {
        builds.emplace_back("other", other);
    }
    std::vector<std::pair<int, std::string>> sizes;
    for (const int files : {0, 10000, 100000}) {
        sizes.emplace_back(files, workspace_of(base, files));
    }
    const auto call = [](const std::string &bin) {
        return std::vector<std::string>{bin, "exec", "--observer", "none", "--", "true"};
    };
    for (const auto &[files, ws] : sizes) {
        for (const auto &[name, bin] : builds) {
            run_ms(call(bin), ws);  // warm-up: the backend's probe is remembered, caches warm
        }
    }
    std::map<std::pair<std::string, int>, std::vector<double>> times;
    const auto pressure_before = tea::bench::cpu_pressure();
    for (int r = 0; r < rounds; ++r) {
        for (const auto &[files, ws] : sizes) {
            for (const auto &[name, bin] : builds) {
                times[{name, files}].push_back(run_ms(call(bin), ws));
            }
        }
    }
    std::printf("%d interleaved rounds, workspaces under %s, euid %d\n", rounds, base.c_str(),
                ::geteuid());
    std::printf("cpu pressure before: %s\ncpu pressure after:  %s\n", pressure_before.c_str(),
                tea::bench::cpu_pressure().c_str());
    std::printf("%-28s %10s %14s\n", "exec true in", "median ms", "x its empty");
    for (const auto &[name, bin] : builds) {
        const double empty = median(times[{name, 0}]);
        for (const auto &[files, ws] : sizes) {
            const double m = median(times[{name, files}]);
            std::printf("%-28s %10.2f %14.2f\n",
                        (name + ", " + std::to_string(files) + " files").c_str(), m, m / empty);
        }
    }
    return 0;
}

int run(int argc, char **argv) {
    int rounds = 30;
    std::string other;  // another build's tea-evaluate, timed head to head with this one
    bool sizes = false;
    for (int i = 1; i < argc; ++i) {
        sizes = sizes || std::strcmp(argv[i], "--workspace-sizes") == 0;
        if (i + 1 < argc && std::strcmp(argv[i], "--rounds") == 0) {
            rounds = std::atoi(argv[i + 1]);
        } else if (i + 1 < argc && std::strcmp(argv[i], "--compare") == 0) {
            other = argv[i + 1];
        }
    }
    if (sizes) {
        return workspace_sizes(rounds, other);
    }
    const std::string tea = TEA_EVALUATE_BIN;
    const std::string helper = TEA_SANDBOX_HELPER;
    const std::string floor = TEA_PROCESS_FLOOR;
    const std::string ws = tea::bench::scratch_dir("tea-bench");
    const std::string file = ws + "/data";
    {
        std::ofstream out{file};
        out << std::string(1 << 20, 'x');
    }
    const std::string unbudgeted = ws + "/no-budgets.toml";
    std::ofstream{unbudgeted} << "[budgets]\nmemory = 0\nprocesses = 0\n";
    const auto raw = tea::bench::raw_bwrap(helper);
    // The call's directories where the runtime keeps them, so that the plan covers and binds
    // what a real call's does; removed with the run directory (or by a later run's reclaim).
    tea::files::RunDirectory run_dir{
        tea::files::open_private_root(tea::files::default_private_root())};
    const auto planned = tea::bench::planned_call(tea, helper, ws, run_dir, {"true"});
    struct Variant {
        std::string name;
        std::vector<std::string> argv;
        tea::bench::OpenFiles files;
    };
    std::vector<Variant> variants{
        {"bare true", {"true"}, {}},
        {"raw bwrap true", with(raw, {"true"}), {}},
        // Raw bwrap waited to its end: started by process_floor, which also reaps the sandbox's
        // init once it has torn down the namespaces, as the runtime must before a call has ended
        // (raw bwrap's outer process exits before that).
        {"raw bwrap to its end, true",
         with(with(with({floor}, planned.identity()), {"--"}),
              with(tea::bench::raw_bwrap_arguments(), {"true"})),
         {}},
        {"raw bwrap, tea's plan, true", planned.argv, planned.files},
        {"floor: C parent + plan, true", tea::bench::floor_argv(floor, planned, {}), planned.files},
        {"floor + call's dirs, true",
         tea::bench::floor_argv(floor, planned,
                                {"--dirs", tea::files::default_private_root().string()}),
         planned.files},
        {"tea exec opt-out true", {tea, "exec", "--backend", "opt-out", "--", "true"}, {}},
        {"tea exec true", {tea, "exec", "--observer", "none", "--", "true"}, {}},
        {"tea exec true, no budgets",
         {tea, "--config", unbudgeted, "exec", "--observer", "none", "--", "true"},
         {}},
        {"bare cat", {"cat", file}, {}},
        {"raw bwrap cat", with(raw, {"cat", file}), {}},
        {"tea exec cat", {tea, "exec", "--observer", "none", "--", "cat", file}, {}},
    };
    // A login's cost on one call: the grant, the file read for the call and its strings, the
    // redaction of the output. Against the same call through the same env(1), without a login.
    const std::string no_login_home = ws + "/home-empty";
    const std::string login_home = ws + "/home-login";
    std::filesystem::create_directories(no_login_home);
    std::filesystem::create_directories(login_home + "/.claude");
    std::ofstream{login_home + "/.claude/.credentials.json"}
        << R"({"claudeAiOauth": {"accessToken": "sk-ant-oat01-bench-access-token-0123456789",)"
        << R"( "refreshToken": "sk-ant-ort01-bench-refresh-token-0123456789",)"
        << R"( "expiresAt": 1, "scopes": ["user:inference"], "subscriptionType": "max"}})";
    const std::vector<std::string> exec_true{tea, "exec", "--observer", "none"};
    variants.push_back({"tea exec true, env(1)",
                        with(with({"env", "HOME=" + no_login_home}, exec_true), {"--", "true"}),
                        {}});
    variants.push_back({"tea exec true, token login",
                        with(with({"env", "HOME=" + no_login_home,
                                   "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-bench-token-0123456789"},
                                  exec_true),
                             {"--login", "claude", "--", "true"}),
                        {}});
    variants.push_back(
        {"tea exec true, file login",
         with(with({"env", "HOME=" + login_home}, exec_true), {"--login", "claude", "--", "true"}),
         {}});
    if (!other.empty()) {
        variants.push_back(
            {"other exec true", {other, "exec", "--observer", "none", "--", "true"}, {}});
    }
    const auto pressure_before = tea::bench::cpu_pressure();
    // Warm up, so the first round's cold caches do not count (and the backend's probe is
    // remembered).
    for (const auto &v : variants) {
        run_ms(v.argv, ws, v.files);
    }
    std::map<std::string, std::vector<double>> times;
    for (int r = 0; r < rounds; ++r) {
        for (const auto &v : variants) {
            times[v.name].push_back(run_ms(v.argv, ws, v.files));
        }
    }
    std::printf("%d interleaved rounds, workspace %s, euid %d\n", rounds, ws.c_str(), ::geteuid());
    std::printf("cpu pressure before: %s\ncpu pressure after:  %s\n", pressure_before.c_str(),
                tea::bench::cpu_pressure().c_str());
    std::printf("%-28s %10s %14s %14s\n", "variant", "median ms", "x bare", "x raw bwrap");
    for (const auto &v : variants) {
        const bool is_cat = v.name.find("cat") != std::string::npos;
        const double m = median(times[v.name]);
        const double bare = median(times[is_cat ? "bare cat" : "bare true"]);
        const double rawm = median(times[is_cat ? "raw bwrap cat" : "raw bwrap true"]);
        std::printf("%-28s %10.2f %14.2f %14.2f\n", v.name.c_str(), m, m / bare, m / rawm);
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    return tea::bench::run_guarded("exec_overhead_bench", [&] { return run(argc, argv); });
}
