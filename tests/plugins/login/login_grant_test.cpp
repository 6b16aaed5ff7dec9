// The login adapters "claude" and "codex": what each grants for a host the test makes (a real home
// with or without a login file, an environment with or without the token), and each plugin loaded
// as the runtime loads it and asked through its C table.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <tea/login_documents.hpp>
#include <tea/plugin.hpp>
#include <vector>

#include "claude_grant.hpp"
#include "codex_grant.hpp"
#include "plugins/loader.hpp"
#include "plugins/manifest.hpp"
#include "plugins/trust.hpp"
#include "support/json_schema.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using tea::documents::LoginGrant;
using tea::documents::LoginRequest;

LoginRequest request_for(const std::string &login, const fs::path &home,
                         std::vector<std::string> env, bool confined = true) {
    LoginRequest r;
    r.entry = "agent";
    r.login = login;
    r.executable = login;
    r.home = home.string();
    r.env = std::move(env);
    r.confined = confined;
    return r;
}

void write(const fs::path &file, const std::string &content) {
    fs::create_directories(file.parent_path());
    tea::test::write_file(file.string(), content);
}

std::string unavailable(const std::function<void()> &grant) {
    try {
        grant();
    } catch (const tea::sdk::Unavailable &e) {
        return e.what();
    }
    return "granted";
}

TEST(ClaudeLogin, TheTokenPassesAndIsRedactedWhenTheHostSetsIt) {
    const tea::test::TempDir home{"tea-login-home"};
    const auto grant = tea::login::claude_grant(
        request_for("claude", home.path(), {"CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-secret"}));
    EXPECT_EQ(grant.variables, std::vector<std::string>{"CLAUDE_CODE_OAUTH_TOKEN"});
    EXPECT_EQ(grant.redact, std::vector<std::string>{"sk-ant-oat01-secret"});
    EXPECT_TRUE(grant.files.empty());
}

TEST(ClaudeLogin, TheLoginFileUnderTheHomeIsLinkedAtItsPlaceWithItsPublicFields) {
    const tea::test::TempDir home{"tea-login-home"};
    const auto file = home.path() / ".claude" / ".credentials.json";
    write(file, R"({"claudeAiOauth":{"accessToken":"a-secret-token"}})");
    const auto grant = tea::login::claude_grant(request_for("claude", home.path(), {}));
    EXPECT_TRUE(grant.variables.empty());
    ASSERT_EQ(grant.files.size(), 1U);
    EXPECT_EQ(grant.files[0].source, file.string());
    EXPECT_EQ(grant.files[0].home_path, ".claude/.credentials.json");
    EXPECT_EQ(grant.files[0].public_fields,
              (std::vector<std::string>{"scopes", "subscriptionType", "rateLimitTier"}));
}

TEST(ClaudeLogin, ClaudeConfigDirLocatesTheFileInsteadOfTheHome) {
    const tea::test::TempDir home{"tea-login-home"};
    const tea::test::TempDir config{"tea-login-config"};
    write(home.path() / ".claude" / ".credentials.json", "{}");
    write(config.path() / ".credentials.json", "{}");
    const auto grant = tea::login::claude_grant(
        request_for("claude", home.path(), {"CLAUDE_CONFIG_DIR=" + config.path().string()}));
    ASSERT_EQ(grant.files.size(), 1U);
    EXPECT_EQ(grant.files[0].source, (config.path() / ".credentials.json").string());
}

TEST(ClaudeLogin, NoOtherCredentialPassesAndANamedOneIsRedacted) {
    const tea::test::TempDir home{"tea-login-home"};
    auto r =
        request_for("claude", home.path(),
                    {"CLAUDE_CODE_OAUTH_TOKEN=tok-12345678", "ANTHROPIC_API_KEY=sk-api-key-1"});
    auto grant = tea::login::claude_grant(r);
    // The API key is no route of this login: it passes only when the entry names it.
    EXPECT_EQ(grant.variables, std::vector<std::string>{"CLAUDE_CODE_OAUTH_TOKEN"});
    EXPECT_EQ(grant.redact, std::vector<std::string>{"tok-12345678"});
    r.environment_keys = {"ANTHROPIC_API_KEY"};
    grant = tea::login::claude_grant(r);
    EXPECT_EQ(grant.variables, std::vector<std::string>{"CLAUDE_CODE_OAUTH_TOKEN"});
    EXPECT_EQ(grant.redact, (std::vector<std::string>{"tok-12345678", "sk-api-key-1"}));
}

TEST(ClaudeLogin, AConfinedEntryWithNeitherRouteIsUnavailableAndTold3WaysOut) {
    const tea::test::TempDir home{"tea-login-home"};
    const auto why = unavailable(
        [&] { (void)tea::login::claude_grant(request_for("claude", home.path(), {})); });
    EXPECT_NE(why.find((home.path() / ".claude/.credentials.json").string()), std::string::npos)
        << why;
    EXPECT_NE(why.find("CLAUDE_CODE_OAUTH_TOKEN"), std::string::npos) << why;
    EXPECT_NE(why.find("claude setup-token"), std::string::npos) << why;
    EXPECT_NE(why.find("\"confinement\": false"), std::string::npos) << why;
    // An empty token is no token.
    EXPECT_NE(unavailable([&] {
                  (void)tea::login::claude_grant(
                      request_for("claude", home.path(), {"CLAUDE_CODE_OAUTH_TOKEN="}));
              }),
              "granted");
    // Unconfined, the target keeps the host's home: nothing to grant, nothing missing.
    const auto opted_out =
        tea::login::claude_grant(request_for("claude", home.path(), {}, /*confined=*/false));
    EXPECT_TRUE(opted_out.variables.empty());
    EXPECT_TRUE(opted_out.files.empty());
}

TEST(ClaudeLogin, ALoginFileThatIsALinkOrAFifoIsRefusedNamingIt) {
    const tea::test::TempDir home{"tea-login-home"};
    const tea::test::TempDir elsewhere{"tea-login-elsewhere"};
    write(elsewhere.path() / "grading.json", "the answers");
    fs::create_directories(home.path() / ".claude");
    const auto file = home.path() / ".claude" / ".credentials.json";
    fs::create_symlink(elsewhere.path() / "grading.json", file);
    try {
        (void)tea::login::claude_grant(request_for("claude", home.path(), {}));
        FAIL() << "a link was granted";
    } catch (const tea::sdk::Invalid &e) {
        EXPECT_NE(std::string{e.what()}.find(file.string() + " is a symbolic link"),
                  std::string::npos)
            << e.what();
    }
    fs::remove(file);
    ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
    try {
        (void)tea::login::claude_grant(request_for("claude", home.path(), {}));
        FAIL() << "a fifo was granted";
    } catch (const tea::sdk::Invalid &e) {
        EXPECT_NE(std::string{e.what()}.find("is not a regular file"), std::string::npos);
    }
    // The positive control: the same place holding a regular file is granted.
    fs::remove(file);
    write(file, "{}");
    EXPECT_EQ(tea::login::claude_grant(request_for("claude", home.path(), {})).files.size(), 1U);
}

TEST(CodexLogin, TheAuthFileUnderCodexHomeOrTheHomeIsLinkedWithNoPublicField) {
    const tea::test::TempDir home{"tea-login-home"};
    write(home.path() / ".codex" / "auth.json", R"({"tokens":{"access_token":"x"}})");
    auto grant = tea::login::codex_grant(request_for("codex", home.path(), {}));
    ASSERT_EQ(grant.files.size(), 1U);
    EXPECT_EQ(grant.files[0].source, (home.path() / ".codex/auth.json").string());
    EXPECT_EQ(grant.files[0].home_path, ".codex/auth.json");
    EXPECT_TRUE(grant.files[0].public_fields.empty());
    const tea::test::TempDir codex_home{"tea-login-codex-home"};
    write(codex_home.path() / "auth.json", "{}");
    grant = tea::login::codex_grant(
        request_for("codex", home.path(), {"CODEX_HOME=" + codex_home.path().string()}));
    ASSERT_EQ(grant.files.size(), 1U);
    EXPECT_EQ(grant.files[0].source, (codex_home.path() / "auth.json").string());
}

TEST(CodexLogin, TheApiKeyPassesOnlyWhenTheEntryNamesIt) {
    const tea::test::TempDir home{"tea-login-home"};
    auto r = request_for("codex", home.path(), {"OPENAI_API_KEY=sk-proj-secret"});
    EXPECT_NE(unavailable([&] { (void)tea::login::codex_grant(r); }), "granted");
    r.environment_keys = {"OPENAI_API_KEY"};
    const auto grant = tea::login::codex_grant(r);
    EXPECT_EQ(grant.variables, std::vector<std::string>{"OPENAI_API_KEY"});
    EXPECT_EQ(grant.redact, std::vector<std::string>{"sk-proj-secret"});
}

// Each adapter as the runtime meets it: its manifest read, its library loaded and checked, an
// instance made, and grant asked through the table with the request document.
class LoadedLogin : public ::testing::TestWithParam<std::pair<const char *, const char *>> {};

TEST_P(LoadedLogin, GrantsThroughItsTableAndIsListedByPlugins) {
    const auto [name, library] = GetParam();
    const tea::test::TempDir dir{"tea-login-plugin"};
    const auto manifest_file = dir.path() / (std::string{name} + ".toml");
    tea::test::write_file(manifest_file.string(), std::string{"name = \""} + name +
                                                      "\"\nkind = \"login\"\nabi = \"1.7\"\n" +
                                                      "library = \"" + library + "\"\n");
    const tea::plugins::TrustPolicy trust{};
    const auto plugin = tea::plugins::load_plugin(
        tea::plugins::read_manifest(manifest_file, dir.path(), trust), trust);
    EXPECT_TRUE(plugin->capabilities().login_grant);
    const auto instance = plugin->create("{}");
    EXPECT_TRUE(instance->probe().available);
    const tea::test::TempDir home{"tea-login-home"};
    const std::string login_file =
        std::string{name} == "claude" ? ".claude/.credentials.json" : ".codex/auth.json";
    write(home.path() / login_file, "{}");
    const auto &ops = std::get<tea_login_ops>(plugin->ops());
    const auto grant = tea::documents::decode_login_grant(instance->transform(
        ops.grant, "grant", tea::documents::encode(request_for(name, home.path(), {}))));
    ASSERT_EQ(grant.files.size(), 1U);
    EXPECT_EQ(grant.files[0].home_path, login_file);
    // A request the adapter cannot read is refused with the field it lacks.
    try {
        (void)instance->transform(ops.grant, "grant", R"({"entry":"a"})");
        FAIL() << "a request without login was granted";
    } catch (const std::exception &e) {
        EXPECT_NE(std::string{e.what()}.find("login: missing"), std::string::npos) << e.what();
    }
    // A configuration it does not take is refused at create.
    EXPECT_THROW((void)plugin->create(R"({"path": "/x"})"), std::exception);

    const auto listed =
        tea::test::run({TEA_EVALUATE_BIN, "plugins"},
                       tea::test::environment_with({"TEA_PLUGIN_PATH=" + dir.path().string()}));
    EXPECT_EQ(listed.status, 0) << listed.err;
    const auto line = listed.out.find(std::string{name} + " ");
    ASSERT_NE(line, std::string::npos) << listed.out;
    const auto text = listed.out.substr(line, listed.out.find('\n', line) - line);
    EXPECT_NE(text.find(" login "), std::string::npos) << text;
    EXPECT_NE(text.find("ABI 1.7  available"), std::string::npos) << text;
}

// What the real adapters exchange with the host matches docs/schema/login-{request,grant}; the
// control shows each schema refusing what the host's reader refuses.
TEST(LoginDocuments, WhatTheAdaptersExchangeMatchesTheSchemas) {
    const tea::test::TempDir home{"tea-login-home"};
    write(home.path() / ".claude" / ".credentials.json", "{}");
    write(home.path() / ".codex" / "auth.json", "{}");
    const auto claude_request =
        request_for("claude", home.path(), {"CLAUDE_CODE_OAUTH_TOKEN=tok\xff-12345678"});
    auto codex_request = request_for("codex", home.path(), {"OPENAI_API_KEY=sk-1234567890"});
    codex_request.environment_keys = {"OPENAI_API_KEY"};
    const std::string schemas = std::string{TEA_SOURCE_DIR} + "/docs/schema/";
    const auto doc = [](const std::string &text) { return nlohmann::json::parse(text); };
    std::vector<std::pair<nlohmann::json, std::string>> pairs{
        {doc(tea::documents::encode(claude_request)), schemas + "login-request.schema.json"},
        {doc(tea::documents::encode(codex_request)), schemas + "login-request.schema.json"},
        {doc(tea::documents::encode(tea::login::claude_grant(claude_request))),
         schemas + "login-grant.schema.json"},
        {doc(tea::documents::encode(tea::login::codex_grant(codex_request))),
         schemas + "login-grant.schema.json"}};
    EXPECT_EQ(tea::test::schema_problems(pairs, home.path().string()), "");

    const std::vector<std::pair<nlohmann::json, std::string>> refused{
        {doc(R"({"variables":["A=B"],"files":[],"redact":[]})"),
         schemas + "login-grant.schema.json"},
        {doc(R"({"variables":[],"files":[{"source":"/a","homePath":"../x","publicFields":[]}],)"
             R"("redact":[]})"),
         schemas + "login-grant.schema.json"},
        {doc(R"({"variables":[],"files":[],"redact":[],"more":1})"),
         schemas + "login-grant.schema.json"},
        {doc(R"({"entry":"a"})"), schemas + "login-request.schema.json"}};
    const auto problems = "\n" + tea::test::schema_problems(refused, home.path().string());
    for (const char *index : {"0 ", "1 ", "2 ", "3 "}) {
        EXPECT_NE(problems.find(std::string{"\n"} + index), std::string::npos) << problems;
    }
}

INSTANTIATE_TEST_SUITE_P(Adapters, LoadedLogin,
                         ::testing::Values(std::pair{"claude", TEA_CLAUDE_LOGIN_PLUGIN},
                                           std::pair{"codex", TEA_CODEX_LOGIN_PLUGIN}),
                         [](const auto &param_info) {
                             return std::string{param_info.param.first};
                         });

}  // namespace
