// The real Claude Code CLI as a confined target of `tea-evaluate exec`: real bwrap, the audit (by
// each observer of the build) and the egress proxy, against the Messages API mock on this machine's
// loopback. The token is handed with --env, not through a login, so nothing redacts it: these calls
// are the control that the logged-in evaluations of claude_evaluation_test.cpp are held against.
//
// The scripted agent writes a file in its workspace, reads the secret of the withheld evaluation
// folder, and prints the credential the mock echoes. Confined, the write lands, the read finds
// nothing and is listed (exit 3 under --strict), and the credential shows in clear in the
// target's output. The same call under --backend opt-out, the control of the read, hands the
// secret to the API.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "claude_cli.hpp"
#include "harness.hpp"
#include "messages_api_mock.hpp"
#include "support/process.hpp"

namespace tea::test::clients {
namespace {

namespace fs = std::filesystem;
using bwrap::Backend;
using bwrap::Call;
using nlohmann::json;

// This test keeps a filtering item (`=`): the CLI reaches the mock as localhost, which resolves to
// 127.0.0.1. A made-up name needs a pinned item (`@`, docs/egress.md), which
// claude_evaluation_test.cpp uses.
constexpr const char *kMockHost = "localhost";

class ClaudeConfined : public bwrap::Confinement {
   protected:
    void SetUp() override {
        Confinement::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        ASSERT_TRUE(fs::is_regular_file(TEA_TEST_CLAUDE))
            << TEA_TEST_CLAUDE << " is missing: scripts/install-deps.sh installs it";
        fs::create_directory(base() / "mock");
        token_ = "sk-ant-oat01-" + bwrap::random_token(32);
    }

    [[nodiscard]] fs::path written() const { return workspace() / "made-by-agent.txt"; }

    // One session of the CLI in the fixture's workspace, the evaluation folder withheld, the
    // token passed with --env and the mock's CA in the workspace, where the target may read it.
    Call session(const MessagesApiMock &mock, Backend backend) {
        const auto ca = workspace() / "test-ca.pem";
        fs::copy_file(mock.ca_file(), ca, fs::copy_options::overwrite_existing);
        std::vector<std::string> options{
            "--clean-env",
            "--egress",
            mock.host() + ":" + std::to_string(mock.api_port()) + "=127.0.0.1",
            // The CLI's own binary, outside every directory the confinement grants.
            "--system-path",
            fs::path{TEA_TEST_CLAUDE}.parent_path().string(),
            "--env",
            "CLAUDE_CODE_OAUTH_TOKEN=" + token_,
            "--env",
            "NODE_EXTRA_CA_CERTS=" + ca.string(),
            "--env",
            "ANTHROPIC_BASE_URL=" + mock.base_url(),
            // Under opt-out the call keeps these as given: the test's, not the invoker's.
            "--env",
            "HOME=" + (base() / "opt-out-home").string(),
            "--env",
            "TMPDIR=" + (base() / "opt-out-tmp").string(),
        };
        for (const auto &variable : claude_test_environment()) {
            options.insert(options.end(), {"--env", variable});
        }
        fs::create_directories(base() / "opt-out-home");
        fs::create_directories(base() / "opt-out-tmp");
        return {.backend = backend,
                .command = claude_session("Follow the script."),
                .withhold = {withheld().string()},
                .timeout_ms = 60000,
                .options = options};
    }

    // What the API was sent back for the Read of the secret.
    static std::string read_result(const MessagesApiMock &mock) {
        const auto results = tool_results(mock.requests());
        const auto read = std::find_if(results.begin(), results.end(), [](const json &t) {
            return t.at("tool_use_id") == "toolu_mock_1_0";
        });
        return read == results.end() ? std::string{} : read->at("content").get<std::string>();
    }

    std::string token_;
};

// Who runs tea-evaluate, and which observer audits the session.
struct AuditedBy {
    bwrap::Identity identity = bwrap::Identity::invoker;
    const char *observer = "strace";
};
void PrintTo(const AuditedBy &a, std::ostream *os) {
    *os << (a.identity == bwrap::Identity::invoker ? "invoker" : "unprivileged") << "/"
        << a.observer;
}

// The same session audited by each observer of the build, as root and as another user: the CLI
// works alike under each, and the read of the withheld folder is listed by each.
class ClaudeConfinedEachObserver : public ClaudeConfined,
                                   public ::testing::WithParamInterface<AuditedBy> {
   protected:
    void SetUp() override {
        ClaudeConfined::SetUp();
        if (!IsSkipped() && !HasFatalFailure() &&
            GetParam().identity == bwrap::Identity::unprivileged) {
            become_unprivileged();
        }
    }
};

TEST_P(ClaudeConfinedEachObserver, WritesFindsNoEvaluationFolderAndPrintsTheTokenInClear) {
    MessagesApiMock mock{base() / "mock", kMockHost,
                         write_read_echo_turns(written(), secret_file())};
    auto call = session(mock, Backend::bubblewrap);
    call.options.insert(call.options.end(), {"--strict", "--observer", GetParam().observer});
    const auto r = run(call);
    EXPECT_NE(r.err.find(std::string{"audit ("} + GetParam().observer + ")"), std::string::npos)
        << r;

    // (b) The read of the evaluation folder: the folder is absent, and the audit lists it.
    EXPECT_EQ(r.status, 3) << r;
    EXPECT_NE(r.err.find(secret_file().string()), std::string::npos) << r;
    const auto read = read_result(mock);
    EXPECT_NE(read.find("does not exist"), std::string::npos) << read;
    EXPECT_EQ(read.find(secret()), std::string::npos) << read;

    // (a) The write: the file is in the workspace.
    EXPECT_EQ(read_file(written().string()), kWrittenContent) << r;

    // (c) The token: the mock had it as a bearer token through the egress route, and the
    // target's output shows it in clear.
    for (const auto &q : mock.requests()) {
        EXPECT_EQ(q.at("headers").value("authorization", ""), "Bearer " + token_) << q.dump();
    }
    EXPECT_EQ(claude_result(r.out), "credential: Bearer " + token_) << r;
    EXPECT_EQ(r.err.find("egress: the proxy refused"), std::string::npos) << r;
    EXPECT_TRUE(mock.refused_tunnels().empty());
}

std::vector<AuditedBy> observers() {
    using bwrap::Identity;
    std::vector<AuditedBy> out{{Identity::invoker, "strace"}, {Identity::unprivileged, "strace"}};
#ifdef TEA_EBPF_OBSERVER
    if (::geteuid() == 0) {
        out.push_back({Identity::invoker, "ebpf"});  // its programs load as root only
    }
#endif
#ifdef TEA_SECCOMP_OBSERVER
    out.push_back({Identity::invoker, "seccomp"});
    out.push_back({Identity::unprivileged, "seccomp"});  // what auto takes for another user
#endif
    return out;
}
INSTANTIATE_TEST_SUITE_P(Observers, ClaudeConfinedEachObserver, ::testing::ValuesIn(observers()));

// The control of the read: the same session unconfined reads the secret and sends it to the API.
TEST_F(ClaudeConfined, OptedOutTheSameSessionSendsTheSecretToTheApi) {
    MessagesApiMock mock{base() / "mock", kMockHost,
                         write_read_echo_turns(written(), secret_file())};
    const auto r = run(session(mock, Backend::opt_out));
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(read_result(mock).find(secret()), std::string::npos) << r;
    EXPECT_EQ(read_file(written().string()), kWrittenContent) << r;
    EXPECT_EQ(claude_result(r.out), "credential: Bearer " + token_) << r;
}

}  // namespace
}  // namespace tea::test::clients
