// tea/login_documents.hpp as a C++17 adapter uses it: the request read leniently, the grant
// read strictly, every refusal naming its field.
#include <gtest/gtest.h>

#include <string>
#include <tea/login_documents.hpp>

namespace {

using tea::documents::decode_login_grant;
using tea::documents::decode_login_request;
using tea::documents::DocumentError;
using tea::documents::encode;
using tea::documents::LoginGrant;
using tea::documents::LoginRequest;

std::string refusal(const std::string &grant_json) {
    try {
        (void)decode_login_grant(grant_json);
    } catch (const DocumentError &e) {
        return e.what();
    }
    return "accepted";
}

TEST(LoginDocuments, RequestRoundTripsEveryFieldAndBytesThatAreNotUtf8) {
    LoginRequest request;
    request.entry = "agent";
    request.login = "claude";
    request.executable = "claude";
    request.home = std::string{"/home/h\xff"};
    request.env = {"HOME=/home/h", std::string{"TOKEN=a\nb\xfe"}};
    request.environment_keys = {"ANTHROPIC_API_KEY"};
    request.confined = false;
    const auto back = decode_login_request(encode(request));
    EXPECT_EQ(back.entry, request.entry);
    EXPECT_EQ(back.login, request.login);
    EXPECT_EQ(back.executable, request.executable);
    EXPECT_EQ(back.home, request.home);
    EXPECT_EQ(back.env, request.env);
    EXPECT_EQ(back.environment_keys, request.environment_keys);
    EXPECT_FALSE(back.confined);
}

TEST(LoginDocuments, RequestIgnoresUnknownFieldsButRefusesBadKnownOnes) {
    const std::string base =
        R"("entry":"a","login":"claude","executable":"c","home":"/h","env":[],)"
        R"("environmentKeys":[],"confined":true)";
    EXPECT_NO_THROW((void)decode_login_request("{" + base + R"(,"later":1})"));
    EXPECT_THROW((void)decode_login_request(R"({"entry":"a"})"), DocumentError);
    try {
        (void)decode_login_request(
            R"({"entry":"a","login":"claude","executable":"c","home":"/h","env":[],)"
            R"("environmentKeys":[],"confined":"yes"})");
        FAIL() << "accepted";
    } catch (const DocumentError &e) {
        EXPECT_STREQ(e.what(), "confined: expected true or false");
    }
}

TEST(LoginDocuments, GrantRoundTripsEveryField) {
    LoginGrant grant;
    grant.variables = {"CLAUDE_CODE_OAUTH_TOKEN"};
    grant.files = {{"/root/.claude/.credentials.json", ".claude/.credentials.json", {"scopes"}}};
    grant.redact = {std::string{"sk-\xff-token"}};
    const auto back = decode_login_grant(encode(grant));
    EXPECT_EQ(back.variables, grant.variables);
    ASSERT_EQ(back.files.size(), 1U);
    EXPECT_EQ(back.files[0].source, grant.files[0].source);
    EXPECT_EQ(back.files[0].home_path, grant.files[0].home_path);
    EXPECT_EQ(back.files[0].public_fields, grant.files[0].public_fields);
    EXPECT_EQ(back.redact, grant.redact);
}

TEST(LoginDocuments, GrantRefusesWhatWouldReachOutsideTheHomeOrSmuggleAVariable) {
    const auto file = [](const std::string &source, const std::string &home_path) {
        return R"({"variables":[],"redact":[],"files":[{"source":")" + source +
               R"(","homePath":")" + home_path + R"(","publicFields":[]}]})";
    };
    EXPECT_EQ(refusal(file("/c.json", ".claude/c.json")), "accepted");
    EXPECT_EQ(refusal(file("c.json", ".claude/c.json")),
              "files[0].source: expected an absolute path");
    for (const char *outside :
         {"/etc/passwd", "../x", ".claude/../../x", "a//b", "./a", "a/", ""}) {
        EXPECT_EQ(refusal(file("/c.json", outside)).rfind("files[0].homePath: expected", 0), 0U)
            << outside;
    }
    EXPECT_EQ(refusal(R"({"variables":["A=B"],"files":[],"redact":[]})"),
              "variables[0]: expected a variable name ([A-Za-z_][A-Za-z0-9_]*)");
    EXPECT_EQ(refusal(R"({"variables":["1A"],"files":[],"redact":[]})"),
              "variables[0]: expected a variable name ([A-Za-z_][A-Za-z0-9_]*)");
    EXPECT_EQ(refusal(R"({"variables":[],"files":[],"redact":[],"more":1})"),
              "more: unknown field");
    EXPECT_EQ(refusal(R"({"variables":[],"files":[]})"), "redact: missing");
    EXPECT_EQ(refusal(R"({"variables":[],"redact":[],"files":[)"
                      R"({"source":"/a","homePath":"x","publicFields":[]},)"
                      R"({"source":"/b","homePath":"x","publicFields":[]}]})"),
              "files[1].homePath: x is named twice");
    EXPECT_EQ(refusal(R"({"variables":[],"redact":[],"files":[)"
                      R"({"source":{"base64":"L2EAYg=="},"homePath":"x","publicFields":[]}]})"),
              "files[0].source: holds a NUL byte");
    EXPECT_EQ(refusal("[]"), "the login grant is not a JSON object");
}

TEST(LoginDocuments, EnvLookupFindsTheWholeNameOnly) {
    const std::vector<std::string> env{"TOKENX=1", "TOKEN=two=2", "EMPTY="};
    EXPECT_EQ(tea::documents::env_lookup(env, "TOKEN"), "two=2");
    EXPECT_EQ(tea::documents::env_lookup(env, "EMPTY"), "");
    EXPECT_FALSE(tea::documents::env_lookup(env, "TOK").has_value());
}

}  // namespace
