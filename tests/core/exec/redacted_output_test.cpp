// A call's output redacted as it is captured (OutputSpec::redact), against real processes: the
// file and the tee (a pipe or a terminal) never see a secret, whole or split across the target's
// writes, and each attack has its control, the same target run with no secrets named, which shows
// the secret where the redaction would have removed it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "exec/call_runner.hpp"
#include "redaction/secret_matcher.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/terminal.hpp"
#include "util/fd.hpp"

namespace tea::exec {
namespace {

namespace fs = std::filesystem;

const std::string kToken = "sk-ant-oat01-ZKq8Tw3nV5pX";
// A secret of a credentials file may hold a newline and bytes that are not UTF-8.
const std::string kBinarySecret = "line one\nline\xff\xfe two";

class RedactedOutput : public ::testing::Test {
   protected:
    ExecPlan plan(const std::string &script) const {
        ExecPlan p;
        p.argv = {"sh", "-c", script};
        p.env = {"PATH=/usr/bin:/bin", "TOKEN=" + kToken};
        p.cwd = dir_.path().string();
        p.confinement = "opt-out";
        return p;
    }
    // Both streams into files capped at `cap`, redacted of `secrets` unless it is empty.
    RunOptions options(const std::vector<std::string> &secrets, std::uint64_t cap = 1 << 20) const {
        RunOptions o;
        std::shared_ptr<const redaction::SecretMatcher> matcher;
        if (!secrets.empty()) {
            matcher = std::make_shared<const redaction::SecretMatcher>(secrets);
        }
        o.out = {dir_.path() / "stdout", cap, -1, matcher};
        o.err = {dir_.path() / "stderr", cap, -1, matcher};
        o.kill_grace = std::chrono::milliseconds{300};
        return o;
    }
    [[nodiscard]] std::string kept(const std::string &stream) const {
        return test::read_file(dir_.path() / stream);
    }
    void forget_files() const {
        fs::remove(dir_.path() / "stdout");
        fs::remove(dir_.path() / "stderr");
    }
    test::TempDir dir_{"tea-redacted-output"};
};

// Everything written to a pipe's write end, once the test's copy of it is closed.
std::string drain(UniqueFd &reader, UniqueFd &writer) {
    writer.reset();
    std::string all;
    std::array<char, 4096> buffer{};
    for (ssize_t n = 0; (n = ::read(reader.get(), buffer.data(), buffer.size())) > 0;) {
        all.append(buffer.data(), static_cast<std::size_t>(n));
    }
    return all;
}

// A target that prints its token in one write, on both streams, copied to a pipe.
TEST_F(RedactedOutput, ATokenPrintedWholeReachesNeitherTheFileNorThePipe) {
    const auto shown = [&](const std::vector<std::string> &secrets, CallResult &r) {
        forget_files();
        std::array<int, 2> ends{};
        EXPECT_EQ(::pipe2(ends.data(), O_CLOEXEC), 0);
        UniqueFd reader{ends[0]};
        UniqueFd writer{ends[1]};
        auto o = options(secrets);
        o.out.tee_fd = writer.get();
        r = run_call(plan(R"(echo "token: $TOKEN."; echo "err $TOKEN" >&2)"), o);
        EXPECT_EQ(r.exit_code, 0) << r.start_error;
        return drain(reader, writer);
    };
    CallResult r;
    EXPECT_EQ(shown({kToken}, r), "token: [redacted].\n");
    EXPECT_EQ(kept("stdout"), "token: [redacted].\n");
    EXPECT_EQ(kept("stderr"), "err [redacted]\n");
    EXPECT_EQ(r.out.redactions, 1U);
    EXPECT_EQ(r.err.redactions, 1U);
    // The count is of what the target wrote; what is kept is what the file holds.
    EXPECT_EQ(r.out.total_bytes, 7 + kToken.size() + 2);
    EXPECT_EQ(r.out.kept_bytes, 19U);
    // Control: with no secrets named, the token is everywhere.
    EXPECT_EQ(shown({}, r), "token: " + kToken + ".\n");
    EXPECT_EQ(kept("stdout"), "token: " + kToken + ".\n");
    EXPECT_EQ(kept("stderr"), "err " + kToken + "\n");
    EXPECT_EQ(r.out.redactions, 0U);
}

// A target that splits its token across two writes with a pause between them, so that the
// runner reads the halves apart, shown on a terminal.
TEST_F(RedactedOutput, ATokenSplitAcrossTwoWritesIsRedactedWhole) {
    const std::string script =
        R"(printf 'a %s' "${TOKEN%????????}"; sleep 0.2; printf '%s b\n' "${TOKEN#${TOKEN%????????}}")";
    const auto shown = [&](const std::vector<std::string> &secrets, CallResult &r) {
        forget_files();
        test::Terminal terminal;
        auto o = options(secrets);
        o.out.tee_fd = terminal.device();
        r = run_call(plan(script), o);
        EXPECT_EQ(r.exit_code, 0) << r.start_error;
        return terminal.output();
    };
    CallResult r;
    EXPECT_EQ(shown({kToken}, r), "a [redacted] b\n");
    EXPECT_EQ(kept("stdout"), "a [redacted] b\n");
    EXPECT_EQ(r.out.redactions, 1U);
    EXPECT_EQ(r.out.total_bytes, 4 + kToken.size() + 1);
    // Control: the halves arrive as the target wrote them.
    EXPECT_EQ(shown({}, r), "a " + kToken + " b\n");
    EXPECT_EQ(kept("stdout"), "a " + kToken + " b\n");
}

// The stream's last bytes, with no newline: a token there is redacted, and the beginning of one
// that never came, which the redactor held back, is written at the end of the stream (and the
// terminal's line is ended after it).
TEST_F(RedactedOutput, TheStreamsLastBytesAreRedactedOrWrittenAtItsEnd) {
    const auto shown = [&](const std::string &script, const std::vector<std::string> &secrets) {
        forget_files();
        test::Terminal terminal;
        auto o = options(secrets);
        o.out.tee_fd = terminal.device();
        const auto r = run_call(plan(script), o);
        EXPECT_EQ(r.exit_code, 0) << r.start_error;
        return terminal.output();
    };
    EXPECT_EQ(shown(R"(printf 'last %s' "$TOKEN")", {kToken}), "last [redacted]\n");
    EXPECT_EQ(kept("stdout"), "last [redacted]");
    EXPECT_EQ(shown(R"(printf 'last sk-ant-oat01')", {kToken}), "last sk-ant-oat01\n");
    EXPECT_EQ(kept("stdout"), "last sk-ant-oat01");
    // Control.
    EXPECT_EQ(shown(R"(printf 'last %s' "$TOKEN")", {}), "last " + kToken + "\n");
    EXPECT_EQ(kept("stdout"), "last " + kToken);
}

// The cap bounds the redacted stream: a cut there can shorten a marker, never keep the first
// bytes of a secret, and a stream that redaction shortened below the cap is kept whole.
TEST_F(RedactedOutput, TheCapCutsTheRedactedStreamNeverASecret) {
    const std::string script = R"(printf '0123456789abcdefghij%sEND' "$TOKEN")";
    auto r = run_call(plan(script), options({kToken}, 25));
    ASSERT_EQ(r.exit_code, 0) << r.start_error;
    EXPECT_EQ(kept("stdout"), "0123456789abcdefghij[reda");
    EXPECT_EQ(r.out.kept_bytes, 25U);
    EXPECT_TRUE(r.out.truncated);
    EXPECT_EQ(r.out.total_bytes, 20 + kToken.size() + 3);
    EXPECT_EQ(r.out.redactions, 1U);

    forget_files();
    r = run_call(plan(script), options({kToken}, 33));
    EXPECT_EQ(kept("stdout"), "0123456789abcdefghij[redacted]END");
    EXPECT_FALSE(r.out.truncated) << "the redacted stream fits: nothing was cut";

    // Control: a cap that cuts the raw stream keeps the secret's first bytes.
    forget_files();
    r = run_call(plan(script), options({}, 25));
    EXPECT_EQ(kept("stdout"), "0123456789abcdefghij" + kToken.substr(0, 5));
    EXPECT_TRUE(r.out.truncated);
}

// A secret with a newline and bytes that are not UTF-8, split across writes at its newline.
TEST_F(RedactedOutput, ASecretWithANewlineAndBytesThatAreNotUtf8IsRedacted) {
    const std::string script =
        R"(printf 'x line one\n'; sleep 0.2; printf 'line\377\376 two y\n'; )"
        R"(printf 'line one\nline\377\376 two' >&2)";
    auto r = run_call(plan(script), options({kBinarySecret}));
    ASSERT_EQ(r.exit_code, 0) << r.start_error;
    EXPECT_EQ(kept("stdout"), "x [redacted] y\n");
    EXPECT_EQ(kept("stderr"), "[redacted]");
    EXPECT_EQ(r.out.redactions, 1U);
    EXPECT_EQ(r.err.redactions, 1U);
    // Control.
    forget_files();
    r = run_call(plan(script), options({}));
    EXPECT_EQ(kept("stdout"), "x " + kBinarySecret + " y\n");
    EXPECT_EQ(kept("stderr"), kBinarySecret);
}

}  // namespace
}  // namespace tea::exec
