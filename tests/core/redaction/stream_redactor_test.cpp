#include "redaction/stream_redactor.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/redaction/naive_redaction.hpp"
#include "support/process.hpp"

namespace tea::redaction {
namespace {

using tea::test::naive_redaction;

// The text written in the given pieces (each a length; the rest in a last piece), redacted.
std::string redact_in_pieces(const std::vector<std::string> &secrets, const std::string &text,
                             const std::vector<std::size_t> &pieces) {
    const SecretMatcher matcher(secrets);
    StringSink sink;
    StreamRedactor redactor(matcher, sink);
    std::size_t at = 0;
    for (const auto length : pieces) {
        redactor.write(std::string_view{text}.substr(at, length));
        at += length;
        EXPECT_LE(redactor.held(), matcher.longest() == 0 ? 0 : matcher.longest() - 1);
    }
    redactor.write(std::string_view{text}.substr(at));
    redactor.finish();
    return sink.text;
}

std::string redact(const std::vector<std::string> &secrets, const std::string &text) {
    return redact_in_pieces(secrets, text, {});
}

TEST(StreamRedactor, ReplacesEveryOccurrence) {
    const std::string token = "sk-ant-oat01-Zq8xK3";
    EXPECT_EQ(redact({token}, "token=" + token + " and again " + token + "."),
              "token=[redacted] and again [redacted].");
}

// The positive control of every test here: without the redactor the secret is in the bytes.
TEST(StreamRedactor, WithoutTheRedactorTheSecretIsThere) {
    const std::string token = "sk-ant-oat01-Zq8xK3";
    const std::string text = "token=" + token + "\n";
    EXPECT_NE(text.find(token), std::string::npos);
    EXPECT_EQ(redact({}, text), text);
    EXPECT_EQ(redact({token}, text).find(token), std::string::npos);
}

TEST(StreamRedactor, AnEmptySetPassesEveryByteAtOnce) {
    const SecretMatcher matcher(std::vector<std::string>{"", ""});
    EXPECT_TRUE(matcher.empty());
    StringSink sink;
    StreamRedactor redactor(matcher, sink);
    const std::string bytes{"a\0b\xff\xfe\n[redacted]", 15};
    redactor.write(bytes);
    EXPECT_EQ(sink.text, bytes);  // nothing held back
    redactor.finish();
    EXPECT_EQ(sink.text, bytes);
    EXPECT_EQ(redactor.redactions(), 0U);
}

TEST(StreamRedactor, FindsASecretSplitAtEveryBoundary) {
    const std::vector<std::string> secrets{"sk-ant-oat01-Zq8xK3", "refresh-token-77"};
    const std::string text =
        "a sk-ant-oat01-Zq8xK3 b refresh-token-77sk-ant-oat01-Zq8xK3 sk-ant-oat01-Zq8 c";
    const auto expected = naive_redaction(text, secrets).text;
    ASSERT_EQ(expected, "a [redacted] b [redacted][redacted] sk-ant-oat01-Zq8 c");
    for (std::size_t k = 0; k <= text.size(); ++k) {
        EXPECT_EQ(redact_in_pieces(secrets, text, {k}), expected) << "split at " << k;
    }
    for (std::size_t j = 0; j <= text.size(); ++j) {
        for (std::size_t k = 0; j + k <= text.size(); ++k) {
            ASSERT_EQ(redact_in_pieces(secrets, text, {j, k}), expected)
                << "split at " << j << " and " << j + k;
        }
    }
    EXPECT_EQ(redact_in_pieces(secrets, text, std::vector<std::size_t>(text.size(), 1)), expected);
}

TEST(StreamRedactor, OverlappingSecretsLeaveNothingOfEither) {
    EXPECT_EQ(redact({"abcd", "cdef"}, "xxabcdefyy"), "xx[redacted]yy");
    EXPECT_EQ(redact({"abcd", "cdef"}, "xxcdefabcdyy"), "xx[redacted][redacted]yy");
    // A chain of overlaps is one run.
    EXPECT_EQ(redact({"abcd", "cdef", "efgh"}, "-abcdefgh-"), "-[redacted]-");
    // A secret inside another, and one that overlaps the other's end.
    EXPECT_EQ(redact({"bc", "abcd", "de"}, "abcde"), "[redacted]");
}

TEST(StreamRedactor, OfSecretsThatBeginOrEndAnotherTheLongestGoesWhole) {
    const std::vector<std::string> prefixes{"sk-ant-", "sk-ant-oat01-", "sk-ant-oat01-Zq8xK3"};
    EXPECT_EQ(redact(prefixes, "<sk-ant-oat01-Zq8xK3>"), "<[redacted]>");
    EXPECT_EQ(redact(prefixes, "<sk-ant-oat01-Zq8>"), "<[redacted]Zq8>");
    const std::vector<std::string> suffixes{"Zq8xK3", "oat01-Zq8xK3", "sk-ant-oat01-Zq8xK3"};
    EXPECT_EQ(redact(suffixes, "<sk-ant-oat01-Zq8xK3>"), "<[redacted]>");
    EXPECT_EQ(redact(suffixes, "<ant-oat01-Zq8xK3>"), "<ant-[redacted]>");
}

TEST(StreamRedactor, OccurrencesThatOnlyTouchAreOneMarkerEach) {
    EXPECT_EQ(redact({"abab"}, "ababab"), "[redacted]");  // overlapping occurrences
    EXPECT_EQ(redact({"ab"}, "ababab"), "[redacted][redacted][redacted]");
}

TEST(StreamRedactor, ASecretInsideTheMarkersOwnTextIsReplacedOnceAndNotAgain) {
    // The output is never scanned again, so a marker cannot feed another.
    EXPECT_EQ(redact({"redacted"}, "[redacted] redacted"), "[[redacted]] [redacted]");
    EXPECT_EQ(redact({"[redacted]"}, "x[redacted]x"), "x[redacted]x");
    EXPECT_EQ(redact({"dacted]"}, "redacted]"), "re[redacted]");
    const SecretMatcher matcher(std::vector<std::string>{"redacted"});
    StringSink sink;
    StreamRedactor redactor(matcher, sink);
    redactor.write("redacted");
    redactor.finish();
    EXPECT_EQ(redactor.redactions(), 1U);
}

TEST(StreamRedactor, SecretsAreBytes) {
    const std::string with_newline = "line one\nline two";
    const std::string not_utf8{"\xff\xfe\x80token\x00z", 10};
    const std::string text = "<" + with_newline + "|" + not_utf8 + ">";
    EXPECT_EQ(redact({with_newline, not_utf8}, text), "<[redacted]|[redacted]>");
    EXPECT_EQ(redact({"z"}, "azbz"), "a[redacted]b[redacted]");  // one byte long
}

TEST(StreamRedactor, HoldsBackLessThanTheLongestSecret) {
    const std::string token = "0123456789abcdef";
    const SecretMatcher matcher(std::vector<std::string>{token});
    StringSink sink;
    StreamRedactor redactor(matcher, sink);
    // A prefix of the secret one byte at a time: each byte waits until it cannot be a secret's.
    for (std::size_t i = 0; i + 1 < token.size(); ++i) {
        redactor.write(token.substr(i, 1));
        EXPECT_EQ(redactor.held(), i + 1);
        EXPECT_EQ(sink.text, "");
    }
    redactor.write("!");
    EXPECT_EQ(redactor.held(), 0U);
    EXPECT_EQ(sink.text, token.substr(0, token.size() - 1) + "!");
    // Bytes no secret starts with pass at once.
    redactor.write("plain text ");
    EXPECT_EQ(sink.text, token.substr(0, token.size() - 1) + "!plain text ");
}

TEST(StreamRedactor, AgreesWithTheNaiveReplacementOnRandomStreams) {
    std::mt19937 random(34);
    for (int round = 0; round < 900; ++round) {
        // Three kinds of sets: short secrets of a small alphabet, which overlap, nest and repeat
        // (every position is stepped); secrets of 6 bytes or more of a small alphabet (blocks
        // are tested, and nearly every one is found); and of a large alphabet planted in the
        // text (blocks rule out most positions).
        const int kind = round % 3;
        const unsigned letters = kind == 2 ? 26U : 2U + static_cast<unsigned>(round % 4);
        auto word = [&](std::size_t length) {
            std::string s;
            for (std::size_t i = 0; i < length; ++i)
                s.push_back(static_cast<char>('a' + random() % letters));
            return s;
        };
        std::vector<std::string> secrets;
        for (std::size_t n = 1 + random() % 6; n > 0; --n) {
            secrets.push_back(
                word(kind == 0 ? 1 + random() % 7 : 6 + random() % (kind == 1 ? 9 : 35)));
        }
        std::string text;
        while (text.size() < 300 && random() % 40 != 0) {
            text += kind == 2 && random() % 3 == 0 ? secrets[random() % secrets.size()]
                                                   : word(random() % 12);
        }
        std::vector<std::size_t> pieces;
        for (std::size_t left = text.size(); left > 0;) {
            const std::size_t piece = std::min<std::size_t>(left, random() % (kind == 0 ? 9 : 40));
            pieces.push_back(piece);
            left -= piece;
        }
        ASSERT_EQ(redact_in_pieces(secrets, text, pieces), naive_redaction(text, secrets).text)
            << "round " << round;
    }
}

TEST(StreamRedactor, LongSecretsAndManySecretsPastTheDenseStates) {
    // More states than have full rows, so the deep ones are stepped through their failure links.
    std::mt19937 random(3434);
    auto token = [&](std::size_t length) {
        static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789-_";
        std::string s;
        for (std::size_t i = 0; i < length; ++i) s.push_back(kAlphabet[random() % 38]);
        return s;
    };
    std::vector<std::string> secrets;
    for (int i = 0; i < 300; ++i) secrets.push_back(token(8 + random() % 100));
    secrets.push_back(token(20000));
    // Near misses: each secret's first half.
    std::string text;
    for (int i = 0; i < 400; ++i) {
        const auto &s = secrets[random() % secrets.size()];
        text += token(random() % 50) + (random() % 2 == 0 ? s : s.substr(0, s.size() / 2));
    }
    const auto expected = naive_redaction(text, secrets).text;
    EXPECT_EQ(redact(secrets, text), expected);
    EXPECT_EQ(redact_in_pieces(secrets, text, std::vector<std::size_t>(text.size() / 7, 7)),
              expected);
}

// A real process writes a token in two writes, and the runtime's end of the pipe reads it in two
// reads: the redactor sees the secret split as a target's output splits it.
TEST(StreamRedactor, FindsATokenAProcessWritesInTwoWrites) {
    const std::string token = "sk-ant-oat01-Zq8xK3-real-process";
    int out[2];
    int go[2];
    ASSERT_EQ(::pipe(out), 0);
    ASSERT_EQ(::pipe(go), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    posix_spawn_file_actions_addclose(&actions, go[1]);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, go[0], 3);
    const std::vector<std::string> argv{
        "/bin/sh", "-c", "printf %s \"$FIRST\"; read _ <&3 || exit 9; printf %s \"$SECOND\"", "sh"};
    const auto env = tea::test::environment_with(
        {"FIRST=output: " + token.substr(0, 13), "SECOND=" + token.substr(13) + " end"});
    auto args = tea::test::c_strings(argv);
    auto envp = tea::test::c_strings(env);
    pid_t pid = -1;
    ASSERT_EQ(::posix_spawn(&pid, "/bin/sh", &actions, nullptr, args.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    ::close(go[0]);

    const SecretMatcher matcher(std::vector<std::string>{token});
    StringSink sink;
    StreamRedactor redactor(matcher, sink);
    std::string raw;
    std::vector<std::string> reads;
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(out[0], buffer, sizeof buffer);
        if (n <= 0) break;
        reads.emplace_back(buffer, static_cast<std::size_t>(n));
        raw += reads.back();
        redactor.write(reads.back());
        if (reads.size() == 1) {
            ASSERT_EQ(::write(go[1], "\n", 1), 1);  // the second half only now
        }
    }
    redactor.finish();
    ::close(out[0]);
    ::close(go[1]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_EQ(status, 0);
    ASSERT_GE(reads.size(), 2U);
    EXPECT_EQ(reads[0], "output: " + token.substr(0, 13));  // the split is real
    EXPECT_NE(raw.find(token), std::string::npos);          // the control: it was printed
    EXPECT_EQ(sink.text, "output: [redacted] end");
}

}  // namespace
}  // namespace tea::redaction
