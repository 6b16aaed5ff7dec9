#include "redaction/secret_set.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "redaction/stream_redactor.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::redaction {
namespace {

const std::vector<std::string> kClaudeNonSecret{"scopes", "subscriptionType", "rateLimitTier"};

std::string credentials(const std::string &access, const std::string &refresh) {
    return nlohmann::json{{"claudeAiOauth",
                           {{"accessToken", access},
                            {"refreshToken", refresh},
                            {"expiresAt", 1767225600000},
                            {"scopes", {"user:inference"}},
                            {"subscriptionType", "enterprise"},
                            {"rateLimitTier", "default_claude_max_20x"}}}}
        .dump(2);
}

std::string redact(const SecretSet &set, const std::string &text) {
    const auto matcher = set.matcher();
    StringSink sink;
    StreamRedactor redactor(*matcher, sink);
    redactor.write(text);
    redactor.finish();
    return sink.text;
}

TEST(SecretSet, TheTokenVariableAtAnyLength) {
    SecretSet set;
    EXPECT_EQ(set.add_value("", "CLAUDE_CODE_OAUTH_TOKEN").secrets, 0U);
    set.add_value("short", "CLAUDE_CODE_OAUTH_TOKEN");
    EXPECT_EQ(redact(set, "a short answer"), "a [redacted] answer");
}

TEST(SecretSet, ATokenWithANewlineOrBytesThatAreNotUtf8IsReplacedRawAndAsJsonSpellsIt) {
    SecretSet set;
    const std::string token = "line1\nline2\"\xff";
    set.add_value(token, "CLAUDE_CODE_OAUTH_TOKEN");
    EXPECT_EQ(redact(set, "<" + token + ">"), "<[redacted]>");
    // The same token as a JSON record holds it, ASCII-only or not.
    const auto record = nlohmann::json{{"stdout", token}};
    const auto utf8 = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const auto ascii = record.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
    EXPECT_NE(utf8.find("line1"), std::string::npos);  // the control: the record holds it
    EXPECT_EQ(redact(set, utf8), R"({"stdout":"[redacted]"})");
    EXPECT_EQ(redact(set, ascii), R"({"stdout":"[redacted]"})");
}

TEST(SecretSet, TheFileSecretsAreReplacedAndTheFieldsThatAreNoSecretAreNot) {
    SecretSet set;
    const auto added =
        set.add_credentials(credentials("sk-ant-oat01-AAAAAAAAAAAA", "sk-ant-ort01-BBBBBBBBBBBB"),
                            kClaudeNonSecret, ".credentials.json");
    EXPECT_FALSE(added.torn);
    const std::string answer =
        "plan enterprise, tier default_claude_max_20x, scope user:inference, "
        "token sk-ant-oat01-AAAAAAAAAAAA, refresh sk-ant-ort01-BBBBBBBBBBBB";
    EXPECT_EQ(redact(set, answer),
              "plan enterprise, tier default_claude_max_20x, scope user:inference, "
              "token [redacted], refresh [redacted]");
}

TEST(SecretSet, SecretsOnlyGrow) {
    SecretSet set;
    set.add_credentials(credentials("sk-ant-oat01-OLD-ACCESS", "sk-ant-ort01-OLD-REFRESH"),
                        kClaudeNonSecret, ".credentials.json");
    const auto before = set.matcher();
    // The client on the host rotated the tokens during a call.
    set.add_credentials(credentials("sk-ant-oat01-NEW-ACCESS", "sk-ant-ort01-NEW-REFRESH"),
                        kClaudeNonSecret, ".credentials.json");
    EXPECT_EQ(redact(set, "sk-ant-oat01-OLD-ACCESS sk-ant-oat01-NEW-ACCESS"),
              "[redacted] [redacted]");
    // A matcher handed out earlier is unchanged; the set builds a new one.
    EXPECT_NE(before, set.matcher());
    EXPECT_EQ(before->size(), 2U);
    const auto again = set.matcher();
    EXPECT_EQ(again, set.matcher());  // not rebuilt while the set does not grow
    EXPECT_EQ(
        set.add_credentials(credentials("sk-ant-oat01-NEW-ACCESS", "sk-ant-ort01-NEW-REFRESH"),
                            kClaudeNonSecret, ".credentials.json")
            .secrets,
        0U);
    EXPECT_EQ(again, set.matcher());
}

TEST(SecretSet, ATornReadReplacesTheTokenItCut) {
    SecretSet set;
    const std::string whole = credentials("sk-ant-oat01-AAAAAAAAAAAA", "sk-ant-ort01-BBBBBBBBBBBB");
    const auto added = set.add_credentials(whole.substr(0, whole.find("BBBB") + 4),
                                           kClaudeNonSecret, ".credentials.json");
    EXPECT_TRUE(added.torn);
    EXPECT_EQ(redact(set, "sk-ant-oat01-AAAAAAAAAAAA"), "[redacted]");
}

TEST(SecretSet, AnAdditionPastTheCapIsRefusedWholeAndChangesNothing) {
    SecretSet set;
    set.add_value("kept-secret-1", "CLAUDE_CODE_OAUTH_TOKEN");
    const std::size_t before = set.bytes();
    nlohmann::json many = nlohmann::json::array();
    for (int i = 0; i < 70000; ++i) many.push_back("secret-number-" + std::to_string(i));
    try {
        set.add_credentials(many.dump(), {}, "/home/u/.claude/.credentials.json");
        FAIL() << "no refusal";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::no_confine);
        EXPECT_NE(std::string{e.what()}.find("/home/u/.claude/.credentials.json"),
                  std::string::npos);
        EXPECT_NE(std::string{e.what()}.find("1048576"), std::string::npos);
    }
    EXPECT_EQ(set.bytes(), before);
    EXPECT_EQ(set.secrets().size(), 1U);
    EXPECT_EQ(redact(set, "secret-number-1"), "secret-number-1");
}

TEST(SecretSet, AddFromFileReadsTheFileItIsGiven) {
    const test::TempDir dir("tea-redaction");
    const auto path = dir / ".credentials.json";
    test::write_file(path, credentials("sk-ant-oat01-FROM-FILE", "sk-ant-ort01-FROM-FILE"));
    const UniqueFd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    SecretSet set;
    const auto added = set.add_from_file(fd.get(), path.string(), kClaudeNonSecret);
    EXPECT_FALSE(added.torn);
    EXPECT_EQ(redact(set, "sk-ant-oat01-FROM-FILE"), "[redacted]");
}

}  // namespace
}  // namespace tea::redaction
