#include "request_head.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tea::egress {
namespace {

using namespace std::string_literals;

RequestHead parsed(std::string_view bytes) {
    HeadParse parse = parse_request_head(bytes);
    if (auto *failure = std::get_if<HeadFailure>(&parse)) {
        ADD_FAILURE() << "refused: " << describe(failure->error) << " for " << bytes;
        return {};
    }
    return std::get<RequestHead>(std::move(parse));
}

HeadError refused(std::string_view bytes) {
    HeadParse parse = parse_request_head(bytes);
    if (std::holds_alternative<RequestHead>(parse)) {
        ADD_FAILURE() << "accepted: " << bytes;
        return HeadError::too_large;
    }
    return std::get<HeadFailure>(parse).error;
}

TEST(RequestHead, ParsesConnectWithHeaders) {
    const std::string bytes =
        "CONNECT Api.Example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n"
        "User-Agent:  curl/7.88 \t\r\nX-Empty:\r\n\r\nTLS-BYTES";
    const RequestHead head = parsed(bytes);
    EXPECT_EQ(head.method, "CONNECT");
    EXPECT_EQ(head.target, "Api.Example.com:443");
    EXPECT_EQ(head.minor_version, 1);
    ASSERT_TRUE(head.authority.has_value());
    EXPECT_EQ(head.authority->host, "api.example.com");
    EXPECT_EQ(head.authority->port, 443);
    EXPECT_FALSE(head.authority->ipv6);
    ASSERT_EQ(head.headers.size(), 3u);
    EXPECT_EQ(head.headers[1].name, "user-agent");
    EXPECT_EQ(head.headers[1].value, "curl/7.88");
    ASSERT_NE(head.find("x-empty"), nullptr);
    EXPECT_EQ(head.find("x-empty")->value, "");
    EXPECT_EQ(head.length, bytes.size() - std::string("TLS-BYTES").size());
}

TEST(RequestHead, ParsesIpv6AndHttp10) {
    const RequestHead head = parsed("CONNECT [0:0:0:0:0:0:0:1]:8443 HTTP/1.0\r\n\r\n");
    ASSERT_TRUE(head.authority.has_value());
    EXPECT_TRUE(head.authority->ipv6);
    EXPECT_EQ(head.authority->host, "::1");
    EXPECT_EQ(head.authority->text(), "[::1]:8443");
    EXPECT_EQ(head.minor_version, 0);
}

TEST(RequestHead, OtherMethodsParseWithoutAuthority) {
    const RequestHead head =
        parsed("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n");
    EXPECT_EQ(head.method, "GET");
    EXPECT_FALSE(head.authority.has_value());
}

TEST(RequestHead, RefusesMalformedHeads) {
    struct Case {
        std::string bytes;
        HeadError error;
    };
    const std::vector<Case> cases = {
        {"\r\n\r\n", HeadError::bad_request_line},
        {"CONNECT\r\n\r\n", HeadError::bad_request_line},
        {"CONNECT a:1\r\n\r\n", HeadError::bad_request_line},
        {"CONNECT  a:1 HTTP/1.1\r\n\r\n", HeadError::bad_request_line},
        {" CONNECT a:1 HTTP/1.1\r\n\r\n", HeadError::bad_request_line},
        {"CONNECT a:1 HTTP/1.1 \r\n\r\n", HeadError::bad_request_line},
        {"CONNECT a:1 HTTP/1.1 x\r\n\r\n", HeadError::bad_request_line},
        {"CON\tNECT a:1 HTTP/1.1\r\n\r\n", HeadError::bad_method},
        {"CONNECT(x) a:1 HTTP/1.1\r\n\r\n", HeadError::bad_method},
        {std::string(40, 'A') + " a:1 HTTP/1.1\r\n\r\n", HeadError::bad_method},
        {"CONNECT a:1\x7f HTTP/1.1\r\n\r\n", HeadError::bad_target},
        {"CONNECT a\xc3\xa9:1 HTTP/1.1\r\n\r\n", HeadError::bad_target},
        {"CONNECT a:1 HTTP/2.0\r\n\r\n", HeadError::bad_version},
        {"CONNECT a:1 http/1.1\r\n\r\n", HeadError::bad_version},
        {"CONNECT a:1 HTTP/1.10\r\n\r\n", HeadError::bad_version},
        {"CONNECT a:1 HTTP/1.1\n\n", HeadError::bad_line_ending},
        {"CONNECT a:1 HTTP/1.1\r\nHost: a\n\r\n", HeadError::bad_line_ending},
        {"CONNECT a:1 HTTP/1.1\r\nHost: a\rX\r\n\r\n", HeadError::bad_line_ending},
        {"CONNECT a:1 HTTP/1.1\r\nHo\0st: a\r\n\r\n"s, HeadError::bad_line_ending},
        {"CONNECT a:1 HTTP/1.1\r\nHost : a\r\n\r\n", HeadError::bad_header},
        {"CONNECT a:1 HTTP/1.1\r\nHost a\r\n\r\n", HeadError::bad_header},
        {"CONNECT a:1 HTTP/1.1\r\n: a\r\n\r\n", HeadError::bad_header},
        {"CONNECT a:1 HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", HeadError::bad_header},
        {"CONNECT a:1 HTTP/1.1\r\nX: a\x01z\r\n\r\n", HeadError::bad_header},
        {"CONNECT a:1 HTTP/1.1\r\nX: a\x7fz\r\n\r\n", HeadError::bad_header},
        {"CONNECT a:1 HTTP/1.1\r\nHost: a\r\n", HeadError::incomplete},
        {"CONNECT a:1 HTTP/1.1\r", HeadError::incomplete},
    };
    for (const Case &c : cases) {
        EXPECT_EQ(refused(c.bytes), c.error) << c.bytes;
    }
}

TEST(RequestHead, BoundsSizeAndHeaderCount) {
    std::string many = "CONNECT a:1 HTTP/1.1\r\n";
    for (int i = 0; i < 100; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
    EXPECT_EQ(parsed(many + "\r\n").headers.size(), 100u);
    EXPECT_EQ(refused(many + "X-100: v\r\n\r\n"), HeadError::too_many_headers);

    std::string big = "CONNECT a:1 HTTP/1.1\r\nX: ";
    big += std::string(kMaxHeadBytes - big.size() - 4, 'v');
    big += "\r\n\r\n";
    ASSERT_EQ(big.size(), kMaxHeadBytes);
    EXPECT_EQ(parsed(big).length, kMaxHeadBytes);
    std::string bigger = big;
    bigger.insert(30, "v");
    EXPECT_EQ(refused(bigger), HeadError::too_large);
    EXPECT_EQ(refused(std::string(1 << 20, 'A')), HeadError::too_large);
}

TEST(RequestHead, FindsHeadEndIncrementally) {
    const std::string bytes = "CONNECT a:1 HTTP/1.1\r\nHost: a\r\n\r\nrest";
    std::size_t scanned = 0;
    for (std::size_t have = 1; have <= bytes.size(); ++have) {
        const HeadBoundary b = find_head_end(std::string_view(bytes).substr(0, have), scanned);
        if (have < bytes.size() - 4) {
            ASSERT_EQ(b.state, HeadBoundary::State::incomplete) << have;
            EXPECT_LE(b.scanned, have);
            scanned = b.scanned;
        } else {
            ASSERT_EQ(b.state, HeadBoundary::State::complete) << have;
            EXPECT_EQ(b.length, bytes.size() - 4);
        }
    }
    EXPECT_EQ(find_head_end("GET / HTTP/1.1\n").state, HeadBoundary::State::malformed);
    EXPECT_EQ(find_head_end("GET / HTTP/1.1\rX").state, HeadBoundary::State::malformed);
    EXPECT_EQ(find_head_end(std::string("GET \0", 5)).state, HeadBoundary::State::malformed);
    EXPECT_EQ(find_head_end(std::string(kMaxHeadBytes, 'a')).state, HeadBoundary::State::malformed);
}

TEST(Authority, AcceptsHostsTheRulesAllow) {
    const std::vector<std::pair<std::string, std::string>> good = {
        {"example.com:443", "example.com:443"},
        {"EXAMPLE.Com:1", "example.com:1"},
        {"under_score-dash.x:65535", "under_score-dash.x:65535"},
        {"127.0.0.1:8080", "127.0.0.1:8080"},
        {"localhost:80", "localhost:80"},
        {"[::1]:443", "[::1]:443"},
        {"[2001:DB8::0001]:443", "[2001:db8::1]:443"},
        {"[::ffff:127.0.0.1]:443", "[::ffff:127.0.0.1]:443"},
        {std::string(253, 'a') + ":1", std::string(253, 'a') + ":1"},
    };
    for (const auto &[text, normalized] : good) {
        auto result = parse_authority(text);
        ASSERT_TRUE(std::holds_alternative<Authority>(result)) << text;
        EXPECT_EQ(std::get<Authority>(result).text(), normalized);
    }
}

TEST(Authority, RefusesBadSpellings) {
    const std::vector<std::pair<std::string, HeadError>> bad = {
        {"*.example.com:443", HeadError::bad_host},
        {"exa%6dple.com:443", HeadError::bad_host},
        {"user@example.com:443", HeadError::bad_host},
        {"user:pw@example.com:443", HeadError::bad_host},
        {"exa mple.com:443", HeadError::bad_host},
        {"example.com.:443", HeadError::bad_host},
        {".example.com:443", HeadError::bad_host},
        {"example..com:443", HeadError::bad_host},
        {":443", HeadError::bad_host},
        {std::string(254, 'a') + ":443", HeadError::bad_host},
        {"::1:443", HeadError::bad_host},
        {"[::1%25eth0]:443", HeadError::bad_host},
        {"[fe80::1%eth0]:443", HeadError::bad_host},
        {"[::g]:443", HeadError::bad_host},
        {"[1.2.3.4]:443", HeadError::bad_host},
        {"[::1:443", HeadError::bad_host},
        {"[]:443", HeadError::bad_host},
        {"ex\x01mple.com:443", HeadError::bad_host},
        {"ex\0mple.com:443"s, HeadError::bad_host},
        {"example.com/path:443", HeadError::bad_host},
        {"example.com", HeadError::bad_port},
        {"example.com:", HeadError::bad_port},
        {"example.com:0", HeadError::bad_port},
        {"example.com:65536", HeadError::bad_port},
        {"example.com:+443", HeadError::bad_port},
        {"example.com:-443", HeadError::bad_port},
        {"example.com:0443", HeadError::bad_port},
        {"example.com:443 ", HeadError::bad_port},
        {"example.com:4 43", HeadError::bad_port},
        {"example.com:0x1bb", HeadError::bad_port},
        {"example.com:999999", HeadError::bad_port},
        {"[::1]", HeadError::bad_port},
        {"[::1]443", HeadError::bad_port},
        {"[::1]:", HeadError::bad_port},
    };
    for (const auto &[text, error] : bad) {
        auto result = parse_authority(text);
        ASSERT_TRUE(std::holds_alternative<HeadError>(result)) << text;
        EXPECT_EQ(std::get<HeadError>(result), error) << text;
    }
}

TEST(Authority, ConnectHeadWithBadHostIsClassified) {
    EXPECT_EQ(refused("CONNECT *.example.com:443 HTTP/1.1\r\n\r\n"), HeadError::bad_host);
    EXPECT_EQ(refused("CONNECT example.com:0 HTTP/1.1\r\n\r\n"), HeadError::bad_port);
    const HeadParse parse = parse_request_head("CONNECT u@h:1 HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(std::holds_alternative<HeadFailure>(parse));
    EXPECT_EQ(std::get<HeadFailure>(parse).target, "u@h:1");
}

TEST(NormalizeHost, ItemSpellings) {
    bool ipv6 = false;
    EXPECT_EQ(normalize_host("API.example.com", &ipv6), "api.example.com");
    EXPECT_FALSE(ipv6);
    EXPECT_EQ(normalize_host("[::1]", &ipv6), "::1");
    EXPECT_TRUE(ipv6);
    EXPECT_EQ(normalize_host("0::1", &ipv6), "::1");
    EXPECT_EQ(normalize_host("*.example.com"), std::nullopt);
    EXPECT_EQ(normalize_host(""), std::nullopt);
    EXPECT_EQ(normalize_host("[::1"), std::nullopt);
    EXPECT_EQ(normalize_host("["), std::nullopt);
    EXPECT_EQ(normalize_host("fe80::1%lo"), std::nullopt);
}

}  // namespace
}  // namespace tea::egress
