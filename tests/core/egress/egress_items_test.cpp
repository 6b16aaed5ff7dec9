// The --egress option's items: what the core reads itself (the split into host, port and
// addresses), before the egress plugin's policy judges the host's spelling.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "egress/egress.hpp"
#include "util/error.hpp"

namespace tea::egress {
namespace {

TEST(EgressItem, HostAndPort) {
    const auto item = parse_item("api.example.com:443");
    EXPECT_EQ(item.host, "api.example.com");
    EXPECT_EQ(item.port, 443);
    EXPECT_TRUE(item.addresses.empty());
}

TEST(EgressItem, AddressesAfterTheEqualsSign) {
    const auto item = parse_item("db.example.com:5432=192.0.2.7,2001:db8::7");
    EXPECT_EQ(item.host, "db.example.com");
    EXPECT_EQ(item.port, 5432);
    EXPECT_EQ(item.addresses, (std::vector<std::string>{"192.0.2.7", "2001:db8::7"}));
}

TEST(EgressItem, IPv6InBrackets) {
    const auto item = parse_item("[::1]:8443");
    EXPECT_EQ(item.host, "::1");
    EXPECT_EQ(item.port, 8443);
}

TEST(EgressItem, MalformedItemsAreUsageErrors) {
    for (const char *bad :
         {"", "example.com", "example.com:", ":443", "example.com:0", "example.com:65536",
          "example.com:44x", "::1:443", "[::1]443", "[::1",
          "example.com:443=", "example.com:443=1.2.3.4,,5.6.7.8", "example.com:-1"}) {
        try {
            (void)parse_item(bad);
            ADD_FAILURE() << "accepted: " << bad;
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage) << bad;
        }
    }
}

TEST(EgressItem, ItemsAsJson) {
    const auto doc = nlohmann::json::parse(
        items_to_json({parse_item("a.example:443"), parse_item("b.example:80=192.0.2.1")}));
    ASSERT_EQ(doc.size(), 2U);
    EXPECT_EQ(doc[0], (nlohmann::json{{"host", "a.example"}, {"port", 443}}));
    EXPECT_EQ(doc[1]["addresses"], nlohmann::json::array({"192.0.2.1"}));
}

}  // namespace
}  // namespace tea::egress
