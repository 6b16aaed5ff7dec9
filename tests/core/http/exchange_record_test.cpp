// The record of an HTTP exchange (core/http/exchange_record.cpp): its fields, and the cut at
// 64 KiB that never splits a UTF-8 character.
#include <gtest/gtest.h>

#include <string>

#include "http/http_client.hpp"

namespace tea::http {
namespace {

TEST(HttpExchangeRecord, RecordsAResponse) {
    const Request request{"POST", "/p?q", {{"X-A", "b"}}, "in"};
    Exchange exchange;
    exchange.outcome = Outcome::response;
    exchange.request_head = "POST /p?q HTTP/1.1\r\n\r\n";
    exchange.raw_head = "HTTP/1.1 200 OK\r\n\r\n";
    exchange.response.status = 200;
    exchange.response.body = "out";
    exchange.elapsed = std::chrono::milliseconds{12};
    const auto record = exchange_record(request, exchange);
    EXPECT_EQ(record["protocol"], "http");
    EXPECT_EQ(record["method"], "POST");
    EXPECT_EQ(record["path"], "/p?q");
    EXPECT_EQ(record["status"], 200);
    EXPECT_EQ(record["requestHead"], exchange.request_head);
    EXPECT_EQ(record["requestBody"], "in");
    EXPECT_EQ(record["requestCut"], false);
    EXPECT_EQ(record["responseHead"], exchange.raw_head);
    EXPECT_EQ(record["responseBody"], "out");
    EXPECT_EQ(record["responseCut"], false);
    EXPECT_EQ(record["responseBytes"], exchange.raw_head.size() + 3);
    EXPECT_EQ(record["outcome"], "response");
    EXPECT_TRUE(record["sentence"].is_null());
    EXPECT_EQ(record["ms"], 12);
}

TEST(HttpExchangeRecord, RecordsAFailureWithItsSentenceAndNoStatus) {
    Exchange exchange;
    exchange.outcome = Outcome::timedOut;
    exchange.sentence = "no whole response within 5 ms";
    const auto record = exchange_record(Request{"GET", "/", {}, ""}, exchange);
    EXPECT_TRUE(record["status"].is_null());
    EXPECT_EQ(record["outcome"], "timedOut");
    EXPECT_EQ(record["sentence"], exchange.sentence);
}

TEST(HttpExchangeRecord, CutsAt64KiBOnACharacterBoundary) {
    // A two-byte character straddling the cut is left out whole.
    const std::string body = std::string(kRecordCutBytes - 1, 'a') + "\xc3\xa9" + "tail";
    Exchange exchange;
    exchange.outcome = Outcome::response;
    exchange.response.body = body;
    const auto record = exchange_record(Request{"GET", "/", {}, body}, exchange);
    EXPECT_EQ(record["responseBody"].get<std::string>(), std::string(kRecordCutBytes - 1, 'a'));
    EXPECT_EQ(record["requestBody"].get<std::string>(), std::string(kRecordCutBytes - 1, 'a'));
    EXPECT_EQ(record["responseCut"], true);
    EXPECT_EQ(record["requestCut"], true);
    EXPECT_EQ(record["responseBytes"], body.size());
    EXPECT_NO_THROW((void)record.dump());

    // Bytes that are not UTF-8 at all are cut at the size.
    exchange.response.body = std::string(kRecordCutBytes + 10, '\x80');
    EXPECT_EQ(exchange_record(Request{"GET", "/", {}, ""}, exchange)["responseBody"]
                  .get<std::string>()
                  .size(),
              kRecordCutBytes);
}

}  // namespace
}  // namespace tea::http
