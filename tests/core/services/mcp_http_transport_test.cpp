// The tool-server client over the streamable HTTP transport against scripted servers
// (fake_mcp_http_server.py) that lie in every way an HTTP endpoint can: each lie is recorded as a
// peer event or the outcome of the request it spoiled, none crashes the client or holds it past
// its timeout. Each sits beside the control of the same server answering as it should.
// mcp_http_sdk_test.cpp runs the MCP SDK's own server.
#include "services/mcp_http_transport.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "call_end.hpp"
#include "peer_events.hpp"
#include "port_server.hpp"
#include "services/mcp_client.hpp"
#include "support/memory.hpp"

namespace tea::services {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr auto start_time = 10s;   // python's start on a loaded machine
constexpr auto answer_time = 10s;  // generous: the lies below end long before

struct Scripted {
    explicit Scripted(const std::string &mode)
        : server({"python3", TEA_FAKE_MCP_HTTP_SERVER, mode}, start_time),
          client(std::make_unique<McpHttpTransport>(McpHttpEndpoint{"127.0.0.1", server.port()})) {}
    test::PortServer server;
    McpClient client;
};

using test::count;

bool says(const McpReply &reply, const std::string &part) {
    return reply.detail.find(part) != std::string::npos;
}

TEST(McpHttpTransport, JsonAnswersCarryTheSessionAndTheAgreedVersion) {
    Scripted s{"good_json"};
    ASSERT_NE(s.server.port(), 0) << "the fake server reported no port";
    const McpReply init = s.client.initialize(answer_time);
    ASSERT_EQ(init.outcome, McpOutcome::result) << init.detail;
    const McpReply listed = s.client.request("tools/list", nullptr, answer_time);
    ASSERT_EQ(listed.outcome, McpOutcome::result) << listed.detail;
    EXPECT_EQ(listed.value["session"], "session-7f3a");
    EXPECT_EQ(listed.value["version"], "2025-06-18");
    EXPECT_EQ(listed.value["accept"], "application/json, text/event-stream");
    EXPECT_EQ(listed.value["type"], "application/json");

    ASSERT_EQ(s.client.exchanges().size(), 3U);  // initialize, notifications/initialized, list
    EXPECT_EQ(s.client.exchanges()[1].http_status, 202);
    const json record = exchange_record(s.client.exchanges()[2]);
    EXPECT_EQ(record["transport"], "http");
    EXPECT_EQ(record["status"], 200);
    EXPECT_EQ(record["outcome"], "result");
    EXPECT_EQ(json::parse(record["response"].get<std::string>())["id"], 2);
    EXPECT_TRUE(s.client.peer_events().empty());
}

// The stream stays open 30 s after the answer: the client leaves it once the answer is in.
TEST(McpHttpTransport, AnEventStreamIsReadUntilTheAnswerNotUntilItEnds) {
    Scripted s{"good_sse"};
    ASSERT_EQ(s.client.initialize(answer_time).outcome, McpOutcome::result);
    const auto start = std::chrono::steady_clock::now();
    const McpReply listed = s.client.request("tools/list", nullptr, answer_time);
    ASSERT_EQ(listed.outcome, McpOutcome::result) << listed.detail;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_EQ(listed.value["session"], "session-7f3a");
    ASSERT_EQ(s.client.peer_events().size(), 1U);  // the server's own notification
    EXPECT_EQ(s.client.peer_events()[0].kind, McpPeerEventKind::server_message);
}

TEST(McpHttpTransport, EventStreamJunkAndWrongIdsAreRecordedAndTheAnswerStillRead) {
    Scripted s{"sse_junk"};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    ASSERT_EQ(reply.outcome, McpOutcome::result) << reply.detail;
    EXPECT_EQ(count(s.client, McpPeerEventKind::not_json), 2U);  // the data, the fieldless line
    EXPECT_EQ(count(s.client, McpPeerEventKind::unknown_id), 1U);
}

TEST(McpHttpTransport, ABodyThatIsNoJsonIsRecordedAndTheRequestClosed) {
    Scripted s{"junk_body"};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    EXPECT_EQ(reply.outcome, McpOutcome::closed);
    EXPECT_TRUE(says(reply, "held no answer to its id")) << reply.detail;
    ASSERT_EQ(count(s.client, McpPeerEventKind::not_json), 1U);
    EXPECT_EQ(s.client.peer_events()[0].line, "<html>surprise</html>");
    EXPECT_EQ(s.client.exchanges()[0].http_status, 200);
}

TEST(McpHttpTransport, AnAnswerToAnIdNeverAskedIsNotTaken) {
    Scripted s{"wrong_id"};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    EXPECT_EQ(reply.outcome, McpOutcome::closed);
    EXPECT_EQ(count(s.client, McpPeerEventKind::unknown_id), 1U);
}

TEST(McpHttpTransport, AStatusOtherThan200Or202IsABadResponseWithItsStatus) {
    Scripted s{"status_500"};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    EXPECT_EQ(reply.outcome, McpOutcome::closed);
    EXPECT_TRUE(says(reply, "HTTP 500")) << reply.detail;
    ASSERT_EQ(count(s.client, McpPeerEventKind::bad_response), 1U);
    EXPECT_NE(s.client.peer_events()[0].line.find("it broke"), std::string::npos);
    EXPECT_EQ(exchange_record(s.client.exchanges()[0])["status"], 500);
}

TEST(McpHttpTransport, A202ToARequestAndA200ToANotificationAreRefused) {
    Scripted accepted{"accepted_request"};
    EXPECT_EQ(accepted.client.request("tools/list", nullptr, answer_time).outcome,
              McpOutcome::closed);
    EXPECT_EQ(count(accepted.client, McpPeerEventKind::bad_response), 1U);
    // Control: the same server's 202 to a notification is the transport's acceptance.
    EXPECT_EQ(accepted.client.notify("notifications/initialized", nullptr, answer_time).outcome,
              McpOutcome::result);

    Scripted answered{"notification_200"};
    const McpReply sent = answered.client.notify("notifications/initialized", nullptr, answer_time);
    EXPECT_EQ(sent.outcome, McpOutcome::closed);
    EXPECT_TRUE(says(sent, "not 202 Accepted")) << sent.detail;
}

TEST(McpHttpTransport, AContentTypeNeitherJsonNorAStreamIsRefused) {
    Scripted s{"html"};
    ASSERT_EQ(s.client.initialize(answer_time).outcome, McpOutcome::result);
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    EXPECT_EQ(reply.outcome, McpOutcome::closed);
    EXPECT_TRUE(says(reply, "text/html")) << reply.detail;
    EXPECT_EQ(count(s.client, McpPeerEventKind::bad_response), 1U);
}

TEST(McpHttpTransport, AServerThatNeverAnswersTimesOutAtTheDeadline) {
    Scripted s{"silent"};
    const auto start = std::chrono::steady_clock::now();
    const McpReply reply = s.client.request("tools/list", nullptr, 500ms);
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(reply.outcome, McpOutcome::timed_out);
    EXPECT_TRUE(says(reply, "did not answer tools/list (id 1) within 500 ms")) << reply.detail;
    EXPECT_GE(took, 500ms);
    EXPECT_LT(took, 3s);
}

// The call's end (an eventfd, as the runner's call_ended is) stops the wait, whatever time the
// request had left: a process the server left holding its port cannot keep the caller waiting.
TEST(McpHttpTransport, TheCallsEndStopsAWaitForAnAnswer) {
    Scripted s{"silent"};
    const test::CallEnd ended{200ms};
    s.client.stop_when_readable(ended.fd());
    const auto start = std::chrono::steady_clock::now();
    const McpReply reply = s.client.request("tools/list", nullptr, 30s);
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(reply.outcome, McpOutcome::closed) << reply.detail;
    EXPECT_TRUE(says(reply, "the call ended")) << reply.detail;
    EXPECT_LT(waited, 5s);
    EXPECT_TRUE(s.client.closed());
    EXPECT_EQ(s.client.request("tools/list", nullptr, 30s).outcome, McpOutcome::closed);
    // Control: without it, the same silent server holds the request to its own timeout.
    Scripted control{"silent"};
    EXPECT_EQ(control.client.request("tools/list", nullptr, 300ms).outcome, McpOutcome::timed_out);
}

// A gibibyte of one event: the read stops at core/http's body limit, memory stays bounded.
TEST(McpHttpTransport, AGibibyteStreamStopsAtTheBodyLimit) {
    Scripted s{"gibibyte"};
    const std::size_t before = test::status_kib("VmHWM");
    const McpReply reply = s.client.request("tools/list", nullptr, 60s);
    EXPECT_EQ(reply.outcome, McpOutcome::closed);
    EXPECT_TRUE(says(reply, "too large")) << reply.detail;
    EXPECT_EQ(count(s.client, McpPeerEventKind::not_http), 1U);
    EXPECT_LT(test::status_kib("VmHWM") - before, std::size_t{128} * 1024)
        << "more than 128 MiB held";
}

TEST(McpHttpTransport, AServersOwnRequestIsRefusedOnAConnectionOfItsOwn) {
    Scripted s{"server_request"};
    const McpReply reply = s.client.request("tools/list", nullptr, answer_time);
    ASSERT_EQ(reply.outcome, McpOutcome::result) << reply.detail;
    EXPECT_EQ(reply.value["refused"], true);
    EXPECT_EQ(count(s.client, McpPeerEventKind::server_message), 1U);
}

TEST(McpHttpTransport, ASessionIdOutsideVisibleAsciiIsNeverSentBack) {
    Scripted s{"bad_session"};
    ASSERT_EQ(s.client.initialize(answer_time).outcome, McpOutcome::result);
    const McpReply listed = s.client.request("tools/list", nullptr, answer_time);
    ASSERT_EQ(listed.outcome, McpOutcome::result) << listed.detail;
    EXPECT_TRUE(listed.value["session"].is_null());
    EXPECT_EQ(count(s.client, McpPeerEventKind::bad_response), 1U);
}

TEST(McpHttpTransport, ANoServerAtThePortIsClosedNotThrown) {
    McpClient client{std::make_unique<McpHttpTransport>(McpHttpEndpoint{"127.0.0.1", 1})};
    const McpReply reply = client.request("tools/list", nullptr, answer_time);
    EXPECT_EQ(reply.outcome, McpOutcome::closed);
    EXPECT_TRUE(says(reply, "was not reached")) << reply.detail;
    EXPECT_THROW(McpHttpTransport(McpHttpEndpoint{"127.0.0.1", 1, "mcp"}), std::invalid_argument);
}

}  // namespace
}  // namespace tea::services
