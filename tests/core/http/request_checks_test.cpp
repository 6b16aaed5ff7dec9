// The probe side's checks of a request (core/http/request_checks.cpp).
#include <gtest/gtest.h>

#include <string>

#include "http/http_client.hpp"

namespace tea::http {
namespace {

TEST(HttpRequestChecks, RefuseWhatAProbeMayNotSend) {
    EXPECT_FALSE(invalid_method("GET"));
    EXPECT_FALSE(invalid_method("PROPFIND"));
    EXPECT_TRUE(invalid_method(""));
    EXPECT_TRUE(invalid_method("GET /x"));
    EXPECT_TRUE(invalid_method("CONNECT"));
    EXPECT_TRUE(invalid_method(std::string(65, 'A')));

    EXPECT_FALSE(invalid_target("/a/b?c=d%20e#f"));
    EXPECT_TRUE(invalid_target(""));
    EXPECT_TRUE(invalid_target("http://example.com/"));
    EXPECT_TRUE(invalid_target("/a b"));
    EXPECT_TRUE(invalid_target("/a\r\nX: y"));
    EXPECT_TRUE(invalid_target("/\xc3\xa9"));
    EXPECT_FALSE(invalid_target("/" + std::string(8191, 'a')));
    EXPECT_TRUE(invalid_target("/" + std::string(8192, 'a')));

    EXPECT_FALSE(invalid_header({"Accept", "text/plain"}));
    EXPECT_FALSE(invalid_header({"X-Empty", ""}));
    EXPECT_TRUE(invalid_header({"Bad Name", "v"}));
    EXPECT_TRUE(invalid_header({"", "v"}));
    EXPECT_TRUE(invalid_header({"X-A", "v\r\nX-B: w"}));
    EXPECT_TRUE(invalid_header({"X-A", std::string("v\0w", 3)}));
    for (const char *runtime_set : {"Host", "content-length", "Transfer-Encoding", "CONNECTION"}) {
        const auto problem = invalid_header({runtime_set, "x"});
        ASSERT_TRUE(problem) << runtime_set;
        EXPECT_NE(problem->find("set by the runtime"), std::string::npos);
    }
}

}  // namespace
}  // namespace tea::http
