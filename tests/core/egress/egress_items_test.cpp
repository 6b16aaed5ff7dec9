// The --egress option's items: what the core reads itself (the split into host, port and
// addresses), before the egress plugin's policy judges the host's spelling.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "egress/egress.hpp"
#include "egress/pin.hpp"
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

TEST(EgressItem, AddressesAfterTheAtSignPinTheHost) {
    const auto item = parse_item("api.tea-evaluate.test:8443@127.0.0.1,::1");
    EXPECT_EQ(item.host, "api.tea-evaluate.test");
    EXPECT_EQ(item.port, 8443);
    EXPECT_TRUE(item.pinned);
    EXPECT_EQ(item.addresses, (std::vector<std::string>{"127.0.0.1", "::1"}));
    EXPECT_FALSE(parse_item("db.example.com:5432=192.0.2.7").pinned);
    // A host spelled as an address may be pinned to that address only.
    EXPECT_TRUE(parse_item("[::1]:443@::1").pinned);
}

TEST(EgressItem, MalformedPinsAreUsageErrorsNamingTheOption) {
    for (const char *bad :
         {"api.example.com:443@", "api.example.com:443@notanip", "api.example.com:443@1.2.3.4,",
          "api.example.com:443@,1.2.3.4", "api.example.com:443@1.2.3.4/32",
          "api.example.com:443@[::1]", "api.example.com:443@1.2.3.4=5.6.7.8",
          "api.example.com:443=1.2.3.4@5.6.7.8", "127.0.0.1:443@127.0.0.2", "[::1]:443@127.0.0.1",
          "api.example.com@1.2.3.4"}) {
        try {
            (void)parse_item(bad);
            ADD_FAILURE() << "accepted: " << bad;
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage) << bad;
            EXPECT_NE(std::string{e.what()}.find(std::string{"--egress "} + bad), std::string::npos)
                << e.what();
        }
    }
}

TEST(EgressItem, PinProblems) {
    EXPECT_TRUE(pin_problem("api.example.com", {}));
    EXPECT_TRUE(pin_problem("api.example.com", {"localhost"}));
    EXPECT_TRUE(pin_problem("192.0.2.1", {"192.0.2.2"}));
    // Positive control: loopback and private addresses are the operator's to pin.
    EXPECT_FALSE(pin_problem("api.example.com", {"127.0.0.1", "10.0.0.1", "fe80::1"}));
    EXPECT_FALSE(pin_problem("192.0.2.1", {"192.0.2.1"}));
}

TEST(EgressItem, ItemsAsJson) {
    const auto doc = nlohmann::json::parse(
        items_to_json({parse_item("a.example:443"), parse_item("b.example:80=192.0.2.1")}));
    ASSERT_EQ(doc.size(), 2U);
    EXPECT_EQ(doc[0], (nlohmann::json{{"host", "a.example"}, {"port", 443}}));
    EXPECT_EQ(doc[1]["addresses"], nlohmann::json::array({"192.0.2.1"}));
    EXPECT_FALSE(doc[1].contains("pinned"));
    const auto pinned =
        nlohmann::json::parse(items_to_json({parse_item("a.example:443@127.0.0.1")}));
    EXPECT_EQ(
        pinned[0],
        (nlohmann::json{
            {"host", "a.example"}, {"port", 443}, {"addresses", {"127.0.0.1"}}, {"pinned", true}}));
}

}  // namespace
}  // namespace tea::egress
