// The tool-server client against the real @modelcontextprotocol/server-filesystem, pinned and
// installed by scripts/install-deps.sh (mcp_filesystem_for_tests there) with the Node it installs:
// the handshake, the tool list and a list_directory call over the real stdio transport. A missing
// server or Node fails the test; it is never skipped.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "fake_server.hpp"
#include "services/mcp_client.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::services {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr auto answer_time = 30s;  // Node's start on a loaded machine

TEST(McpFilesystemServer, ListsADirectoryThroughToolsCall) {
    ASSERT_TRUE(fs::is_regular_file(TEA_TEST_NODE))
        << TEA_TEST_NODE << " is missing: scripts/install-deps.sh installs it";
    ASSERT_TRUE(fs::is_regular_file(TEA_TEST_MCP_FILESYSTEM))
        << TEA_TEST_MCP_FILESYSTEM << " is missing: scripts/install-deps.sh installs it";
    const test::TempDir root{"tea-mcp-fs"};
    test::write_file((root.path() / "hello.txt").string(), "hello\n");
    fs::create_directory(root.path() / "sub");

    test::FakeServer server{{TEA_TEST_NODE, TEA_TEST_MCP_FILESYSTEM, root.path().string()}};
    McpClient client{std::move(server.to_server), std::move(server.from_server)};
    const McpReply init = client.initialize(answer_time);
    ASSERT_EQ(init.outcome, McpOutcome::result) << init.detail;
    EXPECT_TRUE(init.value["capabilities"].contains("tools")) << init.value.dump();

    const McpReply tools = client.request("tools/list", nullptr, answer_time);
    ASSERT_EQ(tools.outcome, McpOutcome::result) << tools.detail;
    bool listed = false;
    for (const auto &tool : tools.value["tools"]) {
        listed = listed || tool.value("name", "") == "list_directory";
    }
    EXPECT_TRUE(listed) << tools.value.dump();

    const McpReply call = client.request(
        "tools/call", {{"name", "list_directory"}, {"arguments", {{"path", root.path().string()}}}},
        answer_time);
    ASSERT_EQ(call.outcome, McpOutcome::result) << call.detail;
    ASSERT_FALSE(call.value.value("isError", false)) << call.value.dump();
    const std::string text = call.value["content"][0].value("text", "");
    EXPECT_NE(text.find("[FILE] hello.txt"), std::string::npos) << text;
    EXPECT_NE(text.find("[DIR] sub"), std::string::npos) << text;
    EXPECT_TRUE(client.peer_events().empty());
    EXPECT_EQ(client.exchanges().size(), 4U);
}

}  // namespace
}  // namespace tea::services
