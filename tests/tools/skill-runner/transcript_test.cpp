// Reading the agent's stream (tools/skill-runner/transcript.cpp).
#include "transcript.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::skill_runner {
namespace {

class Transcript : public ::testing::Test {
   protected:
    TranscriptStream stream(Agent agent, std::size_t cap = TranscriptStream::kDefaultLineCap) {
        return TranscriptStream{UniqueFd{::open(file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)},
                                agent, cap};
    }
    [[nodiscard]] std::string written() const { return test::read_file(file_); }

    test::TempDir dir_{"tea-transcript"};
    std::string file_ = (dir_ / "transcript.jsonl").string();
};

TEST_F(Transcript, JsonLinesSplitAnywhereAreCheckedWholeAndWrittenAsTheyCame) {
    auto t = stream(Agent::claude);
    const std::string text =
        "{\"type\":\"system\"}\n{\"type\":\"result\",\"is_error\":false,\"result\":\"ok\"}\n";
    for (char c : text) {
        t.feed(std::string_view{&c, 1});
    }
    t.finish();
    EXPECT_EQ(written(), text);
    EXPECT_EQ(t.findings().lines, 2U);
    EXPECT_EQ(t.findings().not_json, 0U);
    EXPECT_TRUE(t.findings().result_seen);
    EXPECT_FALSE(t.findings().result_is_error);
}

TEST_F(Transcript, BytesThatAreNotUtf8AndTextAreCountedNotFatal) {
    auto t = stream(Agent::claude);
    const std::string bad = "{\"type\":\"x\",\"t\":\"\xff\xfe\"}\nplain words\n\n{}\n";
    t.feed(bad);
    t.finish();
    EXPECT_EQ(written(), bad);  // the file holds what the agent printed, byte for byte
    EXPECT_EQ(t.findings().lines, 3U);
    EXPECT_EQ(t.findings().not_json, 2U);
}

TEST_F(Transcript, ALineOverTheCapIsCountedWithoutBeingHeld) {
    auto t = stream(Agent::claude, 64);
    t.feed("{\"a\":\"" + std::string(100, 'x'));
    t.feed(std::string(1000, 'y') + "\"}\n{\"ok\":true}\n");
    t.finish();
    EXPECT_EQ(t.findings().lines, 2U);
    EXPECT_EQ(t.findings().not_json, 1U);
    // Control: a JSON line as long, under a cap it fits, is JSON.
    auto roomy = stream(Agent::claude, 4096);
    roomy.feed("{\"a\":\"" + std::string(1100, 'x') + "\"}\n");
    roomy.finish();
    EXPECT_EQ(roomy.findings().not_json, 0U);
}

TEST_F(Transcript, ClaudesLoginFailuresAndTurnBudgetAreRecognised) {
    // The lines the pinned CLI prints (tests/clients/README.md), shortened.
    auto no_login = stream(Agent::claude);
    no_login.feed(
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Not "
        "logged in\"}]},\"error\":\"authentication_failed\"}\n"
        "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"api_error_status\":null,"
        "\"result\":\"Not logged in \xc2\xb7 Please run /login\"}\n");
    no_login.finish();
    EXPECT_TRUE(no_login.findings().authentication_failed);

    auto refused = stream(Agent::claude);
    refused.feed("{\"type\":\"result\",\"is_error\":true,\"api_error_status\":401}\n");
    refused.finish();
    EXPECT_TRUE(refused.findings().authentication_failed);

    auto turns = stream(Agent::claude);
    turns.feed("{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":true}\n");
    turns.finish();
    EXPECT_TRUE(turns.findings().turn_budget_reached);
    EXPECT_FALSE(turns.findings().authentication_failed);

    // Control: an error of another kind is neither.
    auto other = stream(Agent::claude);
    other.feed(
        "{\"type\":\"result\",\"is_error\":true,\"api_error_status\":500,\"result\":\"x\"}\n");
    other.finish();
    EXPECT_FALSE(other.findings().authentication_failed);
    EXPECT_FALSE(other.findings().turn_budget_reached);
    EXPECT_TRUE(other.findings().result_is_error);
}

TEST_F(Transcript, CodexErrorEventsNamingA401AreALoginFailure) {
    auto refused = stream(Agent::codex);
    refused.feed("{\"type\":\"turn.failed\",\"error\":{\"message\":\"401 Unauthorized\"}}\n");
    refused.finish();
    EXPECT_TRUE(refused.findings().authentication_failed);
    auto other = stream(Agent::codex);
    other.feed("{\"type\":\"error\",\"message\":\"stream disconnected\"}\n");
    other.finish();
    EXPECT_FALSE(other.findings().authentication_failed);
    EXPECT_TRUE(other.findings().result_is_error);
}

}  // namespace
}  // namespace tea::skill_runner
