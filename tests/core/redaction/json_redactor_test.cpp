// A record redacted value by value (core/redaction/json_redactor.hpp): strings, keys and the bytes
// of byte strings lose every secret, the document stays valid JSON, and nothing else changes.
#include "redaction/json_redactor.hpp"

#include <gtest/gtest.h>

#include <string>
#include <tea/json_bytes.hpp>
#include <vector>

#include "redaction/stream_redactor.hpp"

namespace tea::redaction {
namespace {

using nlohmann::json;

const std::string kSecret = "sk-ant-oat01-SECRET-77";

TEST(JsonRedactor, StringsKeysAndByteStringsLoseTheSecret) {
    const SecretMatcher matcher(std::vector<std::string>{kSecret});
    // A path with a byte that is not UTF-8 travels as base64: its bytes hold the secret.
    const std::string path = "/eval/" + kSecret + "\xff";
    const json doc{{"path", bytes::to_json(path)},
                   {"reasons", {"saw " + kSecret, 7, true, nullptr}},
                   {kSecret, {{"nested", kSecret}}}};
    ASSERT_TRUE(doc["path"].contains("base64"));
    const auto out = redact_json(matcher, doc);
    EXPECT_EQ(out.dump().find(kSecret), std::string::npos) << out.dump();
    EXPECT_EQ(bytes::from_json(out["path"], "path").find(kSecret), std::string::npos);
    EXPECT_EQ(bytes::from_json(out["path"], "path"), "/eval/[redacted]\xff");
    EXPECT_EQ(out["reasons"], json({"saw [redacted]", 7, true, nullptr}));
    EXPECT_EQ(out["[redacted]"]["nested"], "[redacted]");
    // The control: without the secret in the matcher, the base64 still decodes to it.
    const SecretMatcher none(std::vector<std::string>{"not-in-this-record"});
    EXPECT_NE(bytes::from_json(redact_json(none, doc)["path"], "path").find(kSecret),
              std::string::npos);
}

TEST(JsonRedactor, KeysThatRedactAlikeAreAllKept) {
    const SecretMatcher matcher(std::vector<std::string>{"first-secret", "second-secret"});
    const auto out = redact_json(matcher, json{{"first-secret", 1}, {"second-secret", 2}});
    ASSERT_EQ(out.size(), 2U) << out.dump();
    EXPECT_TRUE(out.contains("[redacted]"));
    EXPECT_TRUE(out.contains("[redacted]#2"));
}

TEST(JsonRedactor, AByteStringThatDoesNotDecodeIsReplacedWhole) {
    const SecretMatcher matcher(std::vector<std::string>{kSecret});
    EXPECT_EQ(redact_json(matcher, json{{"base64", "@@not base64@@"}}), "[redacted]");
}

// A copy cut inside a secret ends with the secret's start: finish_cut replaces it, finish keeps
// it (the control: nothing says the bytes were a secret's).
TEST(StreamRedactorCut, TheStartOfASecretAtACutIsReplaced) {
    const SecretMatcher matcher(std::vector<std::string>{kSecret});
    const auto cut = "log line\ntoken=" + kSecret.substr(0, 12);
    StringSink sink;
    StreamRedactor redactor{matcher, sink};
    redactor.write(cut);
    redactor.finish_cut();
    EXPECT_EQ(sink.text, "log line\ntoken=[redacted]");
    StringSink kept;
    StreamRedactor control{matcher, kept};
    control.write(cut);
    control.finish();
    EXPECT_EQ(kept.text, cut);
    // A cut after a whole secret changes nothing more.
    StringSink whole;
    StreamRedactor after{matcher, whole};
    after.write("a " + kSecret + " b");
    after.finish_cut();
    EXPECT_EQ(whole.text, "a [redacted] b");
}

}  // namespace
}  // namespace tea::redaction
