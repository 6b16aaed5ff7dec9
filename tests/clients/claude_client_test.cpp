// The real Claude Code CLI, unconfined, against the Messages API mock, with each login route the
// CLI documents: CLAUDE_CODE_OAUTH_TOKEN, and the credentials file under its home. The scripted
// agent writes a file in its workspace, reads a file the test put outside it, and prints the
// credential the mock echoes back.
//
// Nothing here confines or redacts: these runs are the positive control of what a confined,
// redacted run must change. The write lands, the read returns the file's content to the API,
// and the credential shows in clear in the CLI's output. The CLI reaches the mock under a
// made-up host name through the mock's CONNECT proxy, as a confined CLI reaches a host through
// the runtime's egress proxy, and strace shows it connects to nothing else.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "claude_cli.hpp"
#include "harness.hpp"
#include "messages_api_mock.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::test::clients {
namespace {

namespace fs = std::filesystem;
using bwrap::Process;
using bwrap::Result;
using nlohmann::json;

constexpr const char *kMockHost = "api.mock.test";

enum class LoginRoute { token, credentials_file };

std::string route_name(const ::testing::TestParamInfo<LoginRoute> &info) {
    return info.param == LoginRoute::token ? "OAuthTokenVariable" : "CredentialsFile";
}
void PrintTo(LoginRoute route, std::ostream *os) {  // for the test's name in ctest
    *os << (route == LoginRoute::token ? "CLAUDE_CODE_OAUTH_TOKEN" : "~/.claude/.credentials.json");
}

// The address:port of every AF_INET and AF_INET6 connect(2) in an `strace -e trace=connect` log.
std::vector<std::string> inet_connects(const std::string &trace) {
    static const std::regex inet4{
        R"re(sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\))re"};
    static const std::regex inet6{
        R"re(sin6_port=htons\((\d+)\).*inet_pton\(AF_INET6, "([^"]+)")re"};
    std::vector<std::string> found;
    std::istringstream lines{trace};
    for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (std::regex_search(line, m, inet4) || std::regex_search(line, m, inet6)) {
            found.push_back(m[2].str() + ":" + m[1].str());
        }
    }
    return found;
}

class ClaudeClient : public ::testing::TestWithParam<LoginRoute> {
   protected:
    void SetUp() override {
        ASSERT_TRUE(fs::is_regular_file(TEA_TEST_CLAUDE))
            << TEA_TEST_CLAUDE << " is missing: scripts/install-deps.sh installs it";
        for (const char *dir : {"mock", "home", "tmp", "workspace", "outside"}) {
            fs::create_directory(base_ / dir);
        }
        token_ = "sk-ant-oat01-" + bwrap::random_token(32);
        note_ = "note-" + bwrap::random_token(16);
        write_file(note().string(), note_ + "\n");
    }

    [[nodiscard]] fs::path written() const { return base_ / "workspace" / "made-by-agent.txt"; }
    [[nodiscard]] fs::path note() const { return base_ / "outside" / "note.txt"; }

    // The login of `route`: the variable, or the file as `claude login` leaves it (with the
    // scopes of a subscription login, and an access token that expires tomorrow).
    std::vector<std::string> login(LoginRoute route) const {
        if (route == LoginRoute::token) {
            return {"CLAUDE_CODE_OAUTH_TOKEN=" + token_};
        }
        const auto expires = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count() +
                             24LL * 3600 * 1000;
        const json credentials{
            {"claudeAiOauth",
             {{"accessToken", token_},
              {"refreshToken", "sk-ant-ort01-" + bwrap::random_token(32)},
              {"expiresAt", expires},
              {"scopes", {"user:inference", "user:profile", "user:sessions:claude_code"}},
              {"subscriptionType", "max"},
              {"rateLimitTier", "default_claude_max_20x"}}}};
        const auto dir = base_ / "home" / ".claude";
        fs::create_directory(dir);
        write_file((dir / ".credentials.json").string(), credentials.dump());
        fs::permissions(dir / ".credentials.json", fs::perms::owner_read | fs::perms::owner_write);
        return {};
    }

    // One session of the CLI in the workspace, under strace (connect(2) alone) into `trace_`.
    Result run_claude(const MessagesApiMock &mock, std::vector<std::string> env) {
        env.insert(env.end(),
                   {"PATH=/usr/bin:/bin", "HOME=" + (base_ / "home").string(),
                    "TMPDIR=" + (base_ / "tmp").string(), "ANTHROPIC_BASE_URL=" + mock.base_url(),
                    "HTTPS_PROXY=" + mock.proxy_url()});
        const auto &session_env = claude_test_environment();
        env.insert(env.end(), session_env.begin(), session_env.end());
        std::vector<std::string> argv{"/usr/bin/env",
                                      "-C",
                                      (base_ / "workspace").string(),
                                      "/usr/bin/strace",
                                      "-f",
                                      "-qq",
                                      "-e",
                                      "trace=connect",
                                      "-e",
                                      "signal=none",
                                      "-o",
                                      trace_.string()};
        const auto session = claude_session("Follow the script.");
        argv.insert(argv.end(), session.begin(), session.end());
        return Process{argv, env, {}, base_.path()}.wait(std::chrono::seconds{60});
    }

    TempDir base_{"tea-claude-client", fs::perms{0755}};
    fs::path trace_ = base_ / "connect.trace";
    std::string token_;
    std::string note_;
};

TEST_P(ClaudeClient, WritesReadsAndPrintsTheEchoedCredentialInClear) {
    const auto route = GetParam();
    MessagesApiMock mock{base_ / "mock", kMockHost, write_read_echo_turns(written(), note())};
    auto env = login(route);
    env.push_back("NODE_EXTRA_CA_CERTS=" + mock.ca_file().string());
    const auto r = run_claude(mock, env);
    ASSERT_EQ(r.status, 0) << r;

    // (a) The Write: the file is in the workspace.
    EXPECT_EQ(read_file(written().string()), kWrittenContent) << r;

    // (b) The Read: the file's content went back to the API in the next turn.
    const auto requests = mock.requests();
    const auto results = tool_results(requests);
    EXPECT_TRUE(std::any_of(results.begin(), results.end(),
                            [&](const json &t) {
                                return t.at("content").get<std::string>().find(note_) !=
                                       std::string::npos;
                            }))
        << "no tool result carries the note's content\n"
        << json(results).dump(2);

    // (c) The credential, echoed by the mock, shows in clear in the CLI's output: what the
    // redaction of a confined run must hide.
    EXPECT_EQ(claude_result(r.out), "credential: Bearer " + token_) << r;
    EXPECT_NE(r.out.find(token_), std::string::npos) << r;

    // Both routes send the token as a bearer token, on every turn, and no API key.
    ASSERT_FALSE(requests.empty());
    std::vector<json> turns_seen;
    for (const auto &q : requests) {
        EXPECT_EQ(q.at("method"), "POST") << q.dump();
        EXPECT_EQ(q.at("path").get<std::string>().rfind("/v1/messages", 0), 0U) << q.dump();
        EXPECT_EQ(q.at("headers").value("authorization", ""), "Bearer " + token_) << q.dump();
        EXPECT_FALSE(q.at("headers").contains("x-api-key")) << q.dump();
        turns_seen.push_back(q.at("turn"));
    }
    EXPECT_EQ(json(turns_seen), json::array({0, 1, 2}));

    // Nothing but the mock: the one host the CLI tunnels to is the mock's, except that a file
    // login with the user:profile scope asks api.anthropic.com for the account's profile, with
    // the access token, whatever ANTHROPIC_BASE_URL says (the mock's proxy refuses it).
    const auto refused = mock.refused_tunnels();
    if (route == LoginRoute::token) {
        EXPECT_TRUE(refused.empty()) << json(refused).dump();
    } else {
        EXPECT_EQ(json(refused), json::array({"api.anthropic.com:443"}));
    }
    const auto connects = inet_connects(read_file(trace_.string()));
    EXPECT_FALSE(connects.empty()) << "strace saw no connect(2): the trace is not what it reads";
    for (const auto &to : connects) {
        EXPECT_EQ(to, "127.0.0.1:" + std::to_string(mock.proxy_port()))
            << "the CLI connected elsewhere than the mock's proxy";
    }
}

// The control of the TLS route: without the test CA the CLI refuses the mock's certificate, so
// the runs above reached the mock because NODE_EXTRA_CA_CERTS named it, not around TLS.
TEST_P(ClaudeClient, RefusesTheMockWithoutTheTestCa) {
    MessagesApiMock mock{base_ / "mock", kMockHost, write_read_echo_turns(written(), note())};
    const auto r = run_claude(mock, login(GetParam()));
    EXPECT_NE(r.status, 0) << r;
    EXPECT_TRUE(mock.requests().empty()) << "a request reached the API";
    EXPECT_FALSE(fs::exists(written())) << r;
    EXPECT_NE(r.out.find("certificate"), std::string::npos) << r;
}

INSTANTIATE_TEST_SUITE_P(Routes, ClaudeClient,
                         ::testing::Values(LoginRoute::token, LoginRoute::credentials_file),
                         route_name);

}  // namespace
}  // namespace tea::test::clients
