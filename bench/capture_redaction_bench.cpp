// What redacting a call's output as it is captured costs (exec::OutputSpec::redact).
//
//   capture_redaction_bench [--mib N] [--rounds R] [--secrets S]
//
// Runs, through the call runner (exec::run_call, no confinement), a target that prints N MiB
// (default 1024) of target-like output (redaction_text.hpp: a 16 MiB text with a secret every
// 256 KiB or so, printed by one cat again and again) into a capped file (8 MiB, the default of
// [call] output_cap_bytes), with and without a matcher of S secrets (default 200), interleaved over
// R rounds (default 5). Prints the medians of the call's wall time, its throughput, and the
// runtime's own CPU time (what reading, redacting and keeping cost; the target's is not counted),
// and checks that the redacted runs wrote one marker per planted secret.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench_support.hpp"
#include "exec/call_runner.hpp"
#include "redaction/secret_matcher.hpp"
#include "redaction_text.hpp"

namespace {

using tea::bench::median;

double runtime_cpu_seconds() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

struct Measured {
    double wall_s = 0;
    double cpu_s = 0;
    tea::exec::StreamResult out;
};

Measured run_once(const tea::exec::ExecPlan &plan, const std::string &dir,
                  const std::shared_ptr<const tea::redaction::SecretMatcher> &matcher) {
    tea::exec::RunOptions options;
    const std::string out = dir + "/stdout";
    const std::string err = dir + "/stderr";
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    options.out = {out, std::uint64_t{8} << 20U, -1, matcher};
    options.err = {err, std::uint64_t{8} << 20U, -1, matcher};
    const double cpu_start = runtime_cpu_seconds();
    const auto result = tea::exec::run_call(plan, options);
    const double cpu = runtime_cpu_seconds() - cpu_start;
    if (result.exit_code != 0) {
        std::fprintf(stderr, "the target failed: %s (status %d)\n", result.start_error.c_str(),
                     result.status());
        std::exit(1);
    }
    return {std::chrono::duration<double>(result.elapsed).count(), cpu, result.out};
}

}  // namespace

int main(int argc, char **argv) {
    std::size_t mib = 1024;
    std::size_t rounds = 5;
    std::size_t secret_count = 200;
    if (!tea::bench::read_numeric_options(
            argc, argv, {{"--mib", &mib}, {"--rounds", &rounds}, {"--secrets", &secret_count}})) {
        return 2;
    }
    constexpr std::size_t text_mib = 16;
    if (mib < text_mib || mib % text_mib != 0 || rounds == 0 || secret_count == 0) {
        std::fprintf(stderr, "--mib must be a multiple of 16; --rounds and --secrets positive\n");
        return 2;
    }
    return tea::bench::run_guarded("capture_redaction_bench", [&] {
        tea::bench::Random random(34);
        const auto secrets = tea::bench::make_secrets(secret_count, random);
        std::size_t planted = 0;
        const std::string text = tea::bench::make_output(text_mib << 20U, secrets, random, planted);
        const std::string dir = tea::bench::scratch_dir("tea-capture-redaction");
        std::ofstream{dir + "/text", std::ios::binary} << text;

        tea::exec::ExecPlan plan;
        plan.argv = {"cat"};
        for (std::size_t i = 0; i < mib / text_mib; ++i) {
            plan.argv.push_back("text");
        }
        plan.env = {"PATH=/usr/bin:/bin"};
        plan.cwd = dir;
        plan.confinement = "opt-out";
        const auto matcher = std::make_shared<const tea::redaction::SecretMatcher>(secrets);
        const std::uint64_t expected_markers = planted * (mib / text_mib);
        const std::uint64_t printed = text.size() * (mib / text_mib);  // a little over N MiB

        std::vector<double> plain_wall, plain_cpu, redacted_wall, redacted_cpu;
        std::uint64_t markers = 0;
        for (std::size_t round = 0; round < rounds; ++round) {
            const auto plain = run_once(plan, dir, nullptr);
            plain_wall.push_back(plain.wall_s);
            plain_cpu.push_back(plain.cpu_s);
            const auto redacted = run_once(plan, dir, matcher);
            redacted_wall.push_back(redacted.wall_s);
            redacted_cpu.push_back(redacted.cpu_s);
            markers = redacted.out.redactions;
            if (markers != expected_markers || redacted.out.total_bytes != printed) {
                std::fprintf(stderr, "%llu markers for %llu planted secrets, %llu bytes of %llu\n",
                             static_cast<unsigned long long>(markers),
                             static_cast<unsigned long long>(expected_markers),
                             static_cast<unsigned long long>(redacted.out.total_bytes),
                             static_cast<unsigned long long>(printed));
                return 1;
            }
        }
        const auto bytes = static_cast<double>(printed);
        std::printf(
            "%zu MiB printed by cat into an 8 MiB capped file, %zu secrets, %llu markers, "
            "%zu rounds\n",
            mib, matcher->size(), static_cast<unsigned long long>(markers), rounds);
        std::printf("%-24s %10s %8s %18s\n", "median", "wall s", "GB/s", "runtime CPU s");
        std::printf("%-24s %10.3f %8.2f %18.3f\n", "no secrets", median(plain_wall),
                    bytes / median(plain_wall) / 1e9, median(plain_cpu));
        std::printf("%-24s %10.3f %8.2f %18.3f\n", "with the matcher", median(redacted_wall),
                    bytes / median(redacted_wall) / 1e9, median(redacted_cpu));
        return 0;
    });
}
