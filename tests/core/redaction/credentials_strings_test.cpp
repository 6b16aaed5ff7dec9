#include "redaction/credentials_strings.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tea::redaction {
namespace {

const std::vector<std::string> kClaudeNonSecret{"scopes", "subscriptionType", "rateLimitTier"};

// The shape of Claude Code's .credentials.json on Linux.
const std::string kClaudeFile = R"({
  "claudeAiOauth": {
    "accessToken": "sk-ant-oat01-AAAAAAAAAAAAAAAAAAAA",
    "refreshToken": "sk-ant-ort01-BBBBBBBBBBBBBBBBBBBB",
    "expiresAt": 1767225600000,
    "scopes": ["user:inference", "user:profile"],
    "subscriptionType": "enterprise",
    "rateLimitTier": "default_claude_max_20x"
  },
  "mcpOAuth": {
    "github|4f2a9c": {"serverName": "github", "accessToken": "gho_CCCCCCCCCCCC"}
  }
})";

bool has(const std::vector<std::string> &strings, const std::string &s) {
    return std::find(strings.begin(), strings.end(), s) != strings.end();
}

TEST(CredentialsStrings, EveryLongStringValueAtAnyDepth) {
    const auto found = credentials_strings(kClaudeFile, kClaudeNonSecret);
    EXPECT_FALSE(found.torn);
    EXPECT_TRUE(has(found.strings, "sk-ant-oat01-AAAAAAAAAAAAAAAAAAAA"));
    EXPECT_TRUE(has(found.strings, "sk-ant-ort01-BBBBBBBBBBBBBBBBBBBB"));
    EXPECT_TRUE(has(found.strings, "gho_CCCCCCCCCCCC"));
    // Shorter than 8 bytes, and numbers: no secrets.
    EXPECT_FALSE(has(found.strings, "github"));
    EXPECT_FALSE(has(found.strings, "1767225600000"));
}

TEST(CredentialsStrings, TheFieldsThatAreNoSecretKeepTheirValues) {
    const auto found = credentials_strings(kClaudeFile, kClaudeNonSecret);
    EXPECT_FALSE(has(found.strings, "user:inference"));
    EXPECT_FALSE(has(found.strings, "user:profile"));
    EXPECT_FALSE(has(found.strings, "enterprise"));
    EXPECT_FALSE(has(found.strings, "default_claude_max_20x"));
    // The control: without naming them, they are secrets like any other string.
    const auto unnamed = credentials_strings(kClaudeFile, {});
    EXPECT_TRUE(has(unnamed.strings, "user:inference"));
    EXPECT_TRUE(has(unnamed.strings, "enterprise"));
    EXPECT_TRUE(has(unnamed.strings, "default_claude_max_20x"));
}

TEST(CredentialsStrings, OnlyTheNamedFieldsValueIsSpared) {
    const auto found = credentials_strings(
        R"({"scopes": {"inner": "kept-as-written"}, "next": "secret-after-it",
            "list": ["scopes", "also-a-secret"]})",
        kClaudeNonSecret);
    EXPECT_FALSE(has(found.strings, "kept-as-written"));
    EXPECT_TRUE(has(found.strings, "secret-after-it"));
    EXPECT_TRUE(has(found.strings, "also-a-secret"));
}

TEST(CredentialsStrings, FieldNamesAreNoSecretsButOtherKeysAre) {
    const auto found = credentials_strings(kClaudeFile, kClaudeNonSecret);
    EXPECT_FALSE(has(found.strings, "claudeAiOauth"));
    EXPECT_FALSE(has(found.strings, "accessToken"));
    EXPECT_FALSE(has(found.strings, "refreshToken"));
    EXPECT_TRUE(has(found.strings, "github|4f2a9c"));  // a map keyed by data
    const auto keyed = credentials_strings(R"({"sk-ant-oat01-KEYED": true, "OPENAI_API_KEY": null,
                                               "0123456789": 1})",
                                           {});
    EXPECT_TRUE(has(keyed.strings, "sk-ant-oat01-KEYED"));
    EXPECT_TRUE(has(keyed.strings, "0123456789"));
    EXPECT_FALSE(has(keyed.strings, "OPENAI_API_KEY"));
}

TEST(CredentialsStrings, ATornReadGivesItsTextItsTokensAndItsQuotedStrings) {
    const std::string torn = kClaudeFile.substr(0, kClaudeFile.find("BBBB") + 6);
    const auto found = credentials_strings(torn, kClaudeNonSecret);
    EXPECT_TRUE(found.torn);
    EXPECT_TRUE(has(found.strings, torn));                                      // the whole text
    EXPECT_TRUE(has(found.strings, "\"sk-ant-oat01-AAAAAAAAAAAAAAAAAAAA\","));  // a token
    EXPECT_TRUE(has(found.strings, "sk-ant-oat01-AAAAAAAAAAAAAAAAAAAA"));       // a quoted string
    EXPECT_TRUE(has(found.strings, "sk-ant-ort01-BBBBBB"));  // the unterminated last one
    EXPECT_TRUE(has(found.strings, "claudeAiOauth"));        // nothing tells keys from values
}

TEST(CredentialsStrings, ATornReadSparesNoField) {
    const std::string torn = kClaudeFile.substr(0, kClaudeFile.find("mcpOAuth"));
    const auto found = credentials_strings(torn, kClaudeNonSecret);
    EXPECT_TRUE(found.torn);
    EXPECT_TRUE(has(found.strings, "enterprise"));
}

TEST(CredentialsStrings, AQuotedStringIsAlsoTakenUnescaped) {
    const auto found = credentials_strings(R"({"token": "abc\/def\"ghi)", {});
    EXPECT_TRUE(found.torn);
    EXPECT_TRUE(has(found.strings, R"(abc\/def\"ghi)"));
    EXPECT_TRUE(has(found.strings, R"(abc/def"ghi)"));
}

TEST(CredentialsStrings, BytesThatAreNotUtf8MakeATornRead) {
    const std::string text = "{\"accessToken\": \"tok\xff\xfe-0123456789\"}";
    const auto found = credentials_strings(text, {});
    EXPECT_TRUE(found.torn);
    EXPECT_TRUE(has(found.strings, "tok\xff\xfe-0123456789"));
}

TEST(CredentialsStrings, AnEmptyOrShortTextGivesNothing) {
    EXPECT_TRUE(credentials_strings("", {}).strings.empty());
    EXPECT_TRUE(credentials_strings("{\"a\":", {}).strings.empty());
}

TEST(CredentialsStrings, DeepNestingCostsNoStack) {
    const std::string deep =
        std::string(200000, '[') + "\"a-deep-secret\"" + std::string(200000, ']');
    const auto found = credentials_strings(deep, {});
    EXPECT_FALSE(found.torn);
    EXPECT_TRUE(has(found.strings, "a-deep-secret"));
}

}  // namespace
}  // namespace tea::redaction
