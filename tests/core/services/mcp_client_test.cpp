// The tool-server client against scripted servers (fake_mcp_server.py) that lie in every way the
// stdio transport allows: each lie is recorded, none crashes the client or holds it past its
// timeout. mcp_filesystem_test.cpp runs the real server.
#include "services/mcp_client.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "call_end.hpp"
#include "fake_server.hpp"
#include "peer_events.hpp"

namespace tea::services {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr auto answer_time = 10s;  // generous: a loaded machine starts python slowly

struct Scripted {
    explicit Scripted(const std::string &mode, McpLimits limits = {})
        : server({"python3", TEA_FAKE_MCP_SERVER, mode}),
          client(std::move(server.to_server), std::move(server.from_server), limits) {}
    test::FakeServer server;
    McpClient client;
};

using test::count;

TEST(McpClient, AnswersComeBackWithTheirExchangesRecorded) {
    Scripted s{"good"};
    const McpReply init = s.client.initialize(answer_time);
    ASSERT_EQ(init.outcome, McpOutcome::result) << init.detail;
    EXPECT_EQ(init.value["method"], "initialize");
    const McpReply call = s.client.request(
        "tools/call", {{"name", "list_directory"}, {"arguments", {{"path", "/w"}}}}, answer_time);
    ASSERT_EQ(call.outcome, McpOutcome::result) << call.detail;
    EXPECT_EQ(call.value["params"]["arguments"]["path"], "/w");

    ASSERT_EQ(s.client.exchanges().size(), 3U);  // initialize, notifications/initialized, call
    EXPECT_EQ(s.client.exchanges()[1].method, "notifications/initialized");
    EXPECT_EQ(s.client.exchanges()[1].id, 0);
    const json record = exchange_record(s.client.exchanges()[2]);
    EXPECT_EQ(record["id"], 2);
    EXPECT_EQ(record["protocol"], "mcp");
    EXPECT_EQ(record["transport"], "stdio");
    EXPECT_TRUE(record["status"].is_null());
    EXPECT_EQ(record["outcome"], "result");
    EXPECT_EQ(record["sentence"], "");
    EXPECT_TRUE(exchange_record(s.client.exchanges()[1])["id"].is_null());
    EXPECT_EQ(json::parse(record["request"].get<std::string>())["method"], "tools/call");
    EXPECT_EQ(json::parse(record["response"].get<std::string>())["id"], 2);
    EXPECT_TRUE(s.client.peer_events().empty());
}

TEST(McpClient, ANonJsonLineIsRecordedAndTheAnswerStillRead) {
    Scripted s{"not_json"};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    EXPECT_EQ(reply.outcome, McpOutcome::result) << reply.detail;
    ASSERT_EQ(s.client.peer_events().size(), 1U);
    EXPECT_EQ(s.client.peer_events()[0].kind, McpPeerEventKind::not_json);
    EXPECT_EQ(s.client.peer_events()[0].line, "Secure server running on stdio");
}

TEST(McpClient, JsonThatIsNoJsonRpcMessageIsRecorded) {
    Scripted s{"not_jsonrpc"};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    EXPECT_EQ(reply.outcome, McpOutcome::result) << reply.detail;
    EXPECT_EQ(count(s.client, McpPeerEventKind::not_jsonrpc), 2U);
}

TEST(McpClient, AnswersToIdsNeverAskedAreRecordedNotTaken) {
    Scripted s{"unknown_id"};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    ASSERT_EQ(reply.outcome, McpOutcome::result) << reply.detail;
    EXPECT_FALSE(reply.value.contains("lie"));
    // 999, the right number as a string, and a null id.
    EXPECT_EQ(count(s.client, McpPeerEventKind::unknown_id), 3U);
}

TEST(McpClient, AnErrorObjectIsAnOutcomeWithItsError) {
    Scripted s{"error"};
    const McpReply reply = s.client.request("tools/call", {{"name", "nope"}}, answer_time);
    ASSERT_EQ(reply.outcome, McpOutcome::error_object);
    EXPECT_EQ(reply.value["code"], -32602);
    EXPECT_EQ(exchange_record(s.client.exchanges().back())["outcome"], "error");
}

TEST(McpClient, AnEarlyCloseEndsThisRequestAndEveryLaterOne) {
    Scripted s{"close"};
    const McpReply first = s.client.request("tools/list", nullptr, answer_time);
    EXPECT_EQ(first.outcome, McpOutcome::closed);
    EXPECT_NE(first.detail.find("closed its stdout before answering tools/list"), std::string::npos)
        << first.detail;
    const auto start = std::chrono::steady_clock::now();
    const McpReply second = s.client.request("tools/list", nullptr, answer_time);
    EXPECT_EQ(second.outcome, McpOutcome::closed);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

// A write to a closed pipe raises SIGPIPE, whose default action would end this test (and the
// runtime, were it not ignoring the signal): the client takes it as the server's close.
TEST(McpClient, AServerThatClosesItsStdinIsAnOutcomeNotASignal) {
    Scripted s{"close_stdin"};
    ASSERT_EQ(s.client.request("tools/list", nullptr, answer_time).outcome, McpOutcome::result);
    McpReply reply{McpOutcome::result, nullptr, ""};
    for (int i = 0; i < 100 && reply.outcome != McpOutcome::closed; ++i) {
        std::this_thread::sleep_for(20ms);  // until the server's close has happened
        reply = s.client.request("tools/list", nullptr, 50ms);
    }
    EXPECT_EQ(reply.outcome, McpOutcome::closed);
    EXPECT_NE(reply.detail.find("closed its stdin"), std::string::npos) << reply.detail;
}

TEST(McpClient, AServerThatNeverAnswersTimesOutOnTime) {
    Scripted s{"silent"};
    const auto start = std::chrono::steady_clock::now();
    const McpReply reply = s.client.request("tools/list", nullptr, 300ms);
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(reply.outcome, McpOutcome::timed_out);
    EXPECT_GE(waited, 300ms);
    EXPECT_LT(waited, 3s);
    EXPECT_NE(reply.detail.find("within 300 ms"), std::string::npos) << reply.detail;
}

// The call's end (an eventfd here, as the runner's call_ended is) stops the wait, whatever time
// the request had left: a daemon holding the server's stdout open cannot keep the caller waiting.
TEST(McpClient, TheCallsEndStopsAWaitForAnAnswerAndAWaitToWrite) {
    for (const char *mode : {"silent", "no_read"}) {
        Scripted s{mode};
        const test::CallEnd ended{200ms};
        s.client.stop_when_readable(ended.fd());
        const auto start = std::chrono::steady_clock::now();
        const McpReply reply =
            s.client.request("tools/call", {{"blob", std::string(4U << 20U, 'a')}}, 30s);
        const auto waited = std::chrono::steady_clock::now() - start;
        EXPECT_EQ(reply.outcome, McpOutcome::closed) << mode << ": " << reply.detail;
        EXPECT_NE(reply.detail.find("the call ended"), std::string::npos) << reply.detail;
        EXPECT_LT(waited, 5s) << mode;
        EXPECT_EQ(s.client.request("tools/list", nullptr, 30s).outcome, McpOutcome::closed);
    }
    // Control: without it, the same silent server holds the request to its own timeout.
    Scripted s{"silent"};
    EXPECT_EQ(s.client.request("tools/list", nullptr, 300ms).outcome, McpOutcome::timed_out);
}

// A server that never stops writing keeps data ready for every read: the deadline still holds,
// and neither the skipped line nor the count of junk lines grows the client past its caps.
TEST(McpClient, AnEndlessLineTimesOutOnTime) {
    Scripted s{"stream", McpLimits{.max_line_bytes = 1U << 20U}};
    const auto start = std::chrono::steady_clock::now();
    const McpReply reply = s.client.request("tools/list", nullptr, 500ms);
    EXPECT_EQ(reply.outcome, McpOutcome::timed_out) << reply.detail;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(McpClient, AFloodOfJunkLinesTimesOutWithTheEventsCapped) {
    Scripted s{"flood", McpLimits{.max_peer_events = 50}};
    const auto start = std::chrono::steady_clock::now();
    // Long enough for the flooding server to start and pass the cap on a loaded machine.
    const McpReply reply = s.client.request("tools/list", nullptr, 4000ms);
    EXPECT_EQ(reply.outcome, McpOutcome::timed_out) << reply.detail;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
    EXPECT_EQ(s.client.peer_events().size(), 50U);
    EXPECT_GT(s.client.peer_events_dropped(), 0U);
}

TEST(McpClient, AServerThatReadsNothingTimesOutTheWrite) {
    Scripted s{"no_read"};
    // More than a pipe holds, so the write itself must wait on the server.
    const McpReply reply =
        s.client.request("tools/call", {{"blob", std::string(4U << 20U, 'a')}}, 300ms);
    EXPECT_EQ(reply.outcome, McpOutcome::timed_out);
    EXPECT_NE(reply.detail.find("did not read the request"), std::string::npos) << reply.detail;
    EXPECT_TRUE(s.client.exchanges().back().request_cut);
}

TEST(McpClient, ALineOverTheCapIsSkippedWithItsHeadRecorded) {
    Scripted s{"huge", McpLimits{.max_line_bytes = 1U << 20U, .record_bytes = 100}};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    EXPECT_EQ(reply.outcome, McpOutcome::result) << reply.detail;
    ASSERT_EQ(s.client.peer_events().size(), 1U);
    const McpPeerEvent &event = s.client.peer_events()[0];
    EXPECT_EQ(event.kind, McpPeerEventKind::line_too_long);
    EXPECT_EQ(event.line_bytes, 8U << 20U);
    EXPECT_EQ(event.line, std::string(100, 'x'));
    EXPECT_TRUE(event.line_cut);
}

TEST(McpClient, AHugeLineThatNeverEndsIsRecordedAtTheClose) {
    Scripted s{"huge_unterminated", McpLimits{.max_line_bytes = 1U << 20U}};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    EXPECT_EQ(reply.outcome, McpOutcome::closed);
    EXPECT_EQ(count(s.client, McpPeerEventKind::line_too_long), 1U);
}

TEST(McpClient, DeepNestingIsRefusedBeforeParsing) {
    Scripted s{"deep"};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    EXPECT_EQ(reply.outcome, McpOutcome::result) << reply.detail;
    EXPECT_EQ(count(s.client, McpPeerEventKind::not_json), 1U);
}

TEST(McpClient, ALongAnswerIsWholeForTheCallerAndCutInTheRecord) {
    Scripted s{"big_answer", McpLimits{.record_bytes = 1001}};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    ASSERT_EQ(reply.outcome, McpOutcome::result) << reply.detail;
    EXPECT_EQ(reply.value["text"].get<std::string>().size(), 2U * (200U << 10U));
    const McpExchange &exchange = s.client.exchanges().back();
    EXPECT_TRUE(exchange.response_cut);
    EXPECT_LE(exchange.response.size(), 1001U);
    // Cut on a character boundary: the record is still UTF-8 ("é" is two bytes).
    EXPECT_NO_THROW((void)exchange_record(exchange).dump());
}

TEST(McpClient, AServerRequestIsRefusedSoTheServerGoesOn) {
    Scripted s{"ping"};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    ASSERT_EQ(reply.outcome, McpOutcome::result) << reply.detail;
    EXPECT_EQ(reply.value["pingReply"]["id"], "s1");
    EXPECT_EQ(reply.value["pingReply"]["error"]["code"], -32601);
    EXPECT_EQ(count(s.client, McpPeerEventKind::server_message), 1U);
}

TEST(McpClient, AnAnswerWithoutItsNewlineBeforeTheCloseIsTaken) {
    Scripted s{"unterminated_answer"};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    ASSERT_EQ(reply.outcome, McpOutcome::result) << reply.detail;
    EXPECT_EQ(reply.value["last"], true);
}

}  // namespace
}  // namespace tea::services
