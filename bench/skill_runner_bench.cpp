// tea-skill-runner's own cost per call (docs/agent-evaluations.md): a fake agent that prints a few
// stream-json lines and exits, run directly and through the runner (without a skill, and
// installing a small one), interleaved over --rounds rounds (default 40) after one warm-up round;
// medians, and the runner's overhead over the bare agent. The target: under 20 ms per call.
// No confinement: the call around the runner costs what any call costs (exec_overhead_bench).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

namespace fs = std::filesystem;
using tea::bench::median;
using tea::bench::run_ms;

void write(const fs::path &path, const std::string &content) {
    std::ofstream{path} << content;
}

int bench(int argc, char **argv) {
    std::size_t rounds = 40;
    if (!tea::bench::read_numeric_options(argc, argv, {{"--rounds", &rounds}})) {
        return 2;
    }
    const fs::path dir = tea::bench::scratch_dir("tea-skill-runner-bench");
    const auto agent = dir / "agent";
    // What a CLI's stream looks like, shortened: the session's start, one message, the result.
    write(agent,
          "#!/bin/sh\n"
          "echo '{\"type\":\"system\",\"subtype\":\"init\",\"skills\":[\"notes\"]}'\n"
          "echo '{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\","
          "\"text\":\"done\"}]}}'\n"
          "echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false}'\n");
    fs::permissions(agent, fs::perms::owner_all);
    fs::create_directories(dir / "home");
    fs::create_directories(dir / "notes" / "scripts");
    write(dir / "notes" / "SKILL.md", "---\nname: notes\n---\n" + std::string(4000, 'x') + "\n");
    write(dir / "notes" / "scripts" / "run.sh", "#!/bin/sh\necho run\n");
    write(dir / "prompt.txt", "write the notes");
    ::setenv("HOME", (dir / "home").c_str(), 1);

    const std::vector<std::string> bare{agent.string()};
    const std::vector<std::string> runner{TEA_SKILL_RUNNER_BIN, "--agent",      "claude",
                                          "--agent-bin",        agent.string(), "--prompt-file",
                                          "prompt.txt"};
    const auto with_skill = tea::bench::with(runner, {"--skill", (dir / "notes").string()});
    std::vector<double> bare_ms;
    std::vector<double> runner_ms;
    std::vector<double> skill_ms;
    std::printf("cpu pressure before: %s\n", tea::bench::cpu_pressure().c_str());
    for (std::size_t round = 0; round <= rounds; ++round) {
        const double b = run_ms(bare, dir);
        const double r = run_ms(runner, dir);
        const double s = run_ms(with_skill, dir);
        if (round > 0) {  // the first round warms the page cache
            bare_ms.push_back(b);
            runner_ms.push_back(r);
            skill_ms.push_back(s);
        }
    }
    std::printf("cpu pressure after:  %s\n", tea::bench::cpu_pressure().c_str());
    const double b = median(bare_ms);
    const double r = median(runner_ms);
    const double s = median(skill_ms);
    std::printf("%-44s %8s %12s\n", "variant", "median ms", "over bare ms");
    std::printf("%-44s %8.2f %12s\n", "fake agent, bare", b, "-");
    std::printf("%-44s %8.2f %12.2f\n", "tea-skill-runner around it", r, r - b);
    std::printf("%-44s %8.2f %12.2f\n", "tea-skill-runner installing a skill", s, s - b);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    return tea::bench::run_guarded("skill_runner_bench", [&] { return bench(argc, argv); });
}
