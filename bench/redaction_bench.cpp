// Throughput of the redaction of a login's secrets on one core (core/redaction).
//
//   redaction_bench [--mib N] [--rounds R] [--secrets S] [--chunk BYTES] [--naive-mib M]
//                   [--short-secret B]
//
// Streams N MiB (default 1024) of target-like output through a StreamRedactor holding S secrets
// (default 200), in writes of BYTES (default 64 KiB, a pipe read's worth), into a sink that
// copies what it is given into a buffer, as a writer to a file would. The output is a 16 MiB text
// repeated: log lines, source code, JSON, prose, hashes, ids and near misses (the tokens' common
// prefixes followed by other bytes), with a secret every 256 KiB or so. In the same rounds,
// interleaved: memcpy of the same bytes in the same writes (the floor of any pass that copies),
// and a naive redaction, memmem of every secret over every write (M MiB, default 64, since it
// makes S passes; it finds no secret split across writes, so it is a lower bound of its cost).
// With --short-secret, one more secret of B bytes (a token variable that short, which the text
// does not hold) shows what a set whose shortest secret is below 6 bytes costs: every position
// is then tested (secret_matcher.hpp). Prints the median of each in GB/s by the thread's CPU time
// (what one core delivers on a busy machine) and by wall time, and the process's maximum resident
// size, which must not grow with N.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bench_support.hpp"
#include "redaction/stream_redactor.hpp"
#include "redaction_text.hpp"

namespace {

using tea::bench::make_output;
using tea::bench::make_secrets;
using tea::bench::median;
using tea::bench::Random;
using tea::redaction::ByteSink;
using tea::redaction::SecretMatcher;
using tea::redaction::StreamRedactor;

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Copies what it is given into a buffer it reuses, as a writer into a file's page cache would.
class CopyingSink final : public ByteSink {
   public:
    void write(std::string_view bytes) override {
        if (used_ + bytes.size() > buffer_.size()) used_ = 0;
        if (bytes.size() > buffer_.size()) bytes = bytes.substr(0, buffer_.size());
        std::memcpy(buffer_.data() + used_, bytes.data(), bytes.size());
        used_ += bytes.size();
        total += bytes.size();
    }
    std::uint64_t total = 0;

   private:
    std::vector<char> buffer_ = std::vector<char>(1U << 20U);
    std::size_t used_ = 0;
};

struct Pass {
    double cpu = 0;
    double wall = 0;
};

// Calls write(offset, length) for consecutive writes over `total` bytes of the repeated output.
template <typename Write>
Pass timed_pass(const std::string &output, std::size_t total, std::size_t chunk, Write write) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = thread_cpu_seconds();
    std::size_t at = 0;
    for (std::size_t done = 0; done < total;) {
        const std::size_t length = std::min({chunk, total - done, output.size() - at});
        write(std::string_view{output}.substr(at, length));
        done += length;
        at = at + length == output.size() ? 0 : at + length;
    }
    return {thread_cpu_seconds() - cpu_start,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

}  // namespace

int main(int argc, char **argv) {
    std::size_t mib = 1024;
    std::size_t rounds = 5;
    std::size_t secret_count = 200;
    std::size_t chunk = 64 * 1024;
    std::size_t naive_mib = 64;
    std::size_t short_secret = 0;
    if (!tea::bench::read_numeric_options(argc, argv,
                                          {{"--mib", &mib},
                                           {"--rounds", &rounds},
                                           {"--secrets", &secret_count},
                                           {"--chunk", &chunk},
                                           {"--naive-mib", &naive_mib},
                                           {"--short-secret", &short_secret}})) {
        return 2;
    }
    if (mib == 0 || rounds == 0 || secret_count == 0 || chunk == 0) {
        std::fprintf(stderr, "--mib, --rounds, --secrets and --chunk must be positive\n");
        return 2;
    }

    Random random(34);
    auto secrets = make_secrets(secret_count, random);
    std::size_t planted = 0;
    const std::string output = make_output(std::size_t{16} << 20U, secrets, random, planted);
    if (short_secret != 0) secrets.push_back(std::string(short_secret, '\x01'));
    const SecretMatcher matcher(secrets);

    // Every planted secret is found, and none is left, in one pass over the text.
    {
        struct Keep final : ByteSink {
            void write(std::string_view bytes) override { text.append(bytes); }
            std::string text;
        } kept;
        StreamRedactor redactor(matcher, kept);
        timed_pass(output, output.size(), chunk, [&](std::string_view b) { redactor.write(b); });
        redactor.finish();
        bool leaked = false;
        for (const auto &s : secrets) {
            leaked = leaked || kept.text.find(s) != std::string::npos;
        }
        if (redactor.redactions() != planted || leaked) {
            std::fprintf(stderr, "redaction check failed: %llu markers for %zu secrets%s\n",
                         static_cast<unsigned long long>(redactor.redactions()), planted,
                         leaked ? ", a secret left" : "");
            return 1;
        }
    }

    const std::size_t total = mib << 20U;
    const std::size_t naive_total = std::min(naive_mib << 20U, total);
    std::vector<double> copy_cpu, copy_wall, redact_cpu, redact_wall, naive_cpu, naive_wall;
    std::uint64_t markers = 0;
    for (std::size_t round = 0; round < rounds; ++round) {
        CopyingSink copy_sink;
        const Pass copy = timed_pass(output, total, chunk,
                                     [&](std::string_view bytes) { copy_sink.write(bytes); });
        copy_cpu.push_back(static_cast<double>(total) / copy.cpu / 1e9);
        copy_wall.push_back(static_cast<double>(total) / copy.wall / 1e9);

        CopyingSink redact_sink;
        StreamRedactor redactor(matcher, redact_sink);
        const Pass redact = timed_pass(output, total, chunk,
                                       [&](std::string_view bytes) { redactor.write(bytes); });
        redactor.finish();
        markers = redactor.redactions();
        redact_cpu.push_back(static_cast<double>(total) / redact.cpu / 1e9);
        redact_wall.push_back(static_cast<double>(total) / redact.wall / 1e9);

        if (naive_total > 0) {
            std::uint64_t found = 0;
            const Pass naive = timed_pass(output, naive_total, chunk, [&](std::string_view b) {
                for (const auto &s : secrets) {
                    const char *at = b.data();
                    const char *end = b.data() + b.size();
                    while (const void *hit = ::memmem(at, static_cast<std::size_t>(end - at),
                                                      s.data(), s.size())) {
                        ++found;
                        at = static_cast<const char *>(hit) + 1;
                    }
                }
            });
            naive_cpu.push_back(static_cast<double>(naive_total) / naive.cpu / 1e9);
            naive_wall.push_back(static_cast<double>(naive_total) / naive.wall / 1e9);
            if (found == 0 && naive_total >= output.size()) std::fprintf(stderr, "naive: none\n");
        }
    }

    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    std::printf(
        "%zu MiB in %zu-byte writes, %zu secrets (longest %zu bytes), %llu markers, "
        "%zu rounds\n",
        mib, chunk, matcher.size(), matcher.longest(), static_cast<unsigned long long>(markers),
        rounds);
    std::printf("%-34s %8s %8s\n", "median GB/s", "CPU", "wall");
    std::printf("%-34s %8.2f %8.2f\n", "memcpy of the same writes", median(copy_cpu),
                median(copy_wall));
    std::printf("%-34s %8.2f %8.2f\n", "StreamRedactor", median(redact_cpu), median(redact_wall));
    if (naive_total > 0) {
        std::printf("%-34s %8.3f %8.3f   (over %zu MiB)\n", "naive: memmem of each secret",
                    median(naive_cpu), median(naive_wall), naive_total >> 20U);
    }
    std::printf("max resident: %ld KiB\n", usage.ru_maxrss);
    return 0;
}
