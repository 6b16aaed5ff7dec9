// The tool-server client's streamable HTTP transport against the MCP TypeScript SDK's own server
// transport (mcp_http_sdk_server.mjs), from the node_modules scripts/install-deps.sh installs
// with the pinned filesystem server: the handshake, tools/list and tools/call, with the server
// answering in JSON and in an event stream. A missing SDK or Node fails the test; it is never
// skipped.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "port_server.hpp"
#include "services/mcp_client.hpp"
#include "services/mcp_http_transport.hpp"

namespace tea::services {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr auto start_time = 30s;  // Node's start on a loaded machine
constexpr auto answer_time = 30s;

class McpHttpSdkServer : public ::testing::TestWithParam<const char *> {};

TEST_P(McpHttpSdkServer, AnswersTheHandshakeAListAndACall) {
    ASSERT_TRUE(fs::is_regular_file(TEA_TEST_NODE))
        << TEA_TEST_NODE << " is missing: scripts/install-deps.sh installs it";
    ASSERT_TRUE(fs::is_directory(std::string{TEA_TEST_MCP_MODULES} + "/@modelcontextprotocol/sdk"))
        << TEA_TEST_MCP_MODULES << " holds no MCP SDK: scripts/install-deps.sh installs it";
    test::PortServer server{
        {TEA_TEST_NODE, TEA_TEST_MCP_HTTP_SDK_SERVER, TEA_TEST_MCP_MODULES, GetParam()},
        start_time};
    ASSERT_NE(server.port(), 0) << "the SDK's server reported no port";
    auto transport =
        std::make_unique<McpHttpTransport>(McpHttpEndpoint{"127.0.0.1", server.port()});
    const McpHttpTransport &http = *transport;
    McpClient client{std::move(transport)};

    const McpReply init = client.initialize(answer_time);
    ASSERT_EQ(init.outcome, McpOutcome::result) << init.detail;
    EXPECT_TRUE(init.value["capabilities"].contains("tools")) << init.value.dump();
    EXPECT_FALSE(http.session_id().empty());

    const McpReply tools = client.request("tools/list", nullptr, answer_time);
    ASSERT_EQ(tools.outcome, McpOutcome::result) << tools.detail;
    ASSERT_EQ(tools.value["tools"].size(), 2U) << tools.value.dump();
    EXPECT_EQ(tools.value["tools"][0]["name"], "echo");

    const McpReply echo = client.request(
        "tools/call", {{"name", "echo"}, {"arguments", {{"text", "hello"}}}}, answer_time);
    ASSERT_EQ(echo.outcome, McpOutcome::result) << echo.detail;
    EXPECT_EQ(echo.value["content"][0]["text"], "echo: hello") << echo.value.dump();

    // The session the server handed out is the one every later request carried.
    const McpReply session = client.request("tools/call", {{"name", "session"}}, answer_time);
    ASSERT_EQ(session.outcome, McpOutcome::result) << session.detail;
    EXPECT_EQ(session.value["content"][0]["text"], http.session_id());

    // The SDK refuses a tool's arguments its schema does not take, as a result with isError.
    const McpReply refused =
        client.request("tools/call", {{"name", "echo"}, {"arguments", {{"text", 7}}}}, answer_time);
    ASSERT_EQ(refused.outcome, McpOutcome::result) << refused.detail;
    EXPECT_TRUE(refused.value.value("isError", false)) << refused.value.dump();

    EXPECT_TRUE(client.peer_events().empty()) << peer_event_record(client.peer_events()[0]).dump();
    ASSERT_EQ(client.exchanges().size(), 6U);
    for (const auto &exchange : client.exchanges()) {
        EXPECT_EQ(exchange.http_status, exchange.id == 0 ? 202 : 200) << exchange.method;
    }
}

INSTANTIATE_TEST_SUITE_P(JsonAndEventStream, McpHttpSdkServer, ::testing::Values("json", "sse"));

}  // namespace
}  // namespace tea::services
