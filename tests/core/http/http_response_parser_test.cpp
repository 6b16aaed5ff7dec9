// The response parser (core/http/http_response_parser.hpp) on whole inputs and on the same
// inputs fed a byte at a time: each refusal beside the accepted response it differs from.
#include "http/http_response_parser.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tea::http {
namespace {

using State = ResponseParser::State;

struct Parsed {
    State state;
    std::string reason;
    Response response;
};

Parsed parse_whole(const std::string &bytes, const Limits &limits = {}, bool head = false,
                   bool close = true) {
    ResponseParser parser(limits, head);
    parser.feed(bytes);
    if (close) parser.finish();
    return {parser.state(), parser.reason(), parser.response()};
}

Parsed parse_bytewise(const std::string &bytes, const Limits &limits = {}, bool head = false) {
    ResponseParser parser(limits, head);
    for (const char c : bytes) parser.feed(std::string_view(&c, 1));
    parser.finish();
    return {parser.state(), parser.reason(), parser.response()};
}

// Both ways of feeding agree, and the state is `expected`; the reason names `reason_part`.
Parsed expect_parse(const std::string &bytes, State expected, const std::string &reason_part = "",
                    const Limits &limits = {}) {
    const Parsed whole = parse_whole(bytes, limits);
    const Parsed bytewise = parse_bytewise(bytes, limits);
    EXPECT_EQ(to_string(whole.state), to_string(expected)) << whole.reason;
    EXPECT_EQ(to_string(bytewise.state), to_string(expected)) << bytewise.reason;
    EXPECT_EQ(whole.reason, bytewise.reason);
    if (expected == State::done) {
        EXPECT_EQ(whole.response.body, bytewise.response.body);
    }
    if (!reason_part.empty()) {
        EXPECT_NE(whole.reason.find(reason_part), std::string::npos) << whole.reason;
    }
    return whole;
}

TEST(HttpResponseParser, ReadsAContentLengthResponse) {
    const Parsed parsed = expect_parse(
        "HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-A: b \r\n\r\nhello", State::done);
    EXPECT_EQ(parsed.response.status, 201);
    EXPECT_EQ(parsed.response.reason, "Created");
    ASSERT_EQ(parsed.response.headers.size(), 2u);
    EXPECT_EQ(parsed.response.headers[1].name, "X-A");
    EXPECT_EQ(parsed.response.headers[1].value, "b");
    EXPECT_EQ(parsed.response.body, "hello");
}

TEST(HttpResponseParser, BytesAfterTheResponseAreIgnored) {
    const Parsed parsed =
        expect_parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", State::done);
    EXPECT_EQ(parsed.response.body, "ok");
}

TEST(HttpResponseParser, ReadsUntilCloseWithoutFraming) {
    const std::string bytes = "HTTP/1.0 200 OK\r\n\r\nall of it";
    EXPECT_EQ(parse_whole(bytes, {}, false, false).state, State::needMore);
    EXPECT_EQ(expect_parse(bytes, State::done).response.body, "all of it");
}

TEST(HttpResponseParser, SkipsInterimResponses) {
    const Parsed parsed = expect_parse(
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        State::done);
    EXPECT_EQ(parsed.response.status, 200);
    EXPECT_EQ(parsed.response.headers.size(), 1u);
}

TEST(HttpResponseParser, DecodesChunksWithExtensionsAndTrailers) {
    const Parsed parsed = expect_parse(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n"
        "5;name=value\r\nhello\r\n1 ; x=\"y\"\r\n \r\n0000000000000000006\r\nworld!\r\n"
        "0\r\nX-Trailer: t\r\n\r\n",
        State::done);
    EXPECT_EQ(parsed.response.body, "hello world!");
}

TEST(HttpResponseParser, NoBodyForHead204And304) {
    const std::string announced = " OK\r\nContent-Length: 1000\r\n\r\n";
    EXPECT_EQ(parse_whole("HTTP/1.1 200" + announced, {}, true, false).state, State::done);
    EXPECT_EQ(parse_whole("HTTP/1.1 204" + announced, {}, false, false).state, State::done);
    EXPECT_EQ(parse_whole("HTTP/1.1 304" + announced, {}, false, false).state, State::done);
    // Control: a GET's 200 waits for the body it announced.
    EXPECT_EQ(parse_whole("HTTP/1.1 200" + announced, {}, false, false).state, State::needMore);
}

TEST(HttpResponseParser, RefusesContentLengthsThatDiffer) {
    expect_parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
                 State::malformed, "differ (2 and 3)");
    expect_parse("HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nabc", State::malformed, "differ");
    // Control: the same length twice is one framing.
    EXPECT_EQ(expect_parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2, 2\r\n\r\nab",
                           State::done)
                  .response.body,
              "ab");
}

TEST(HttpResponseParser, RefusesAContentLengthThatIsNotANumber) {
    expect_parse("HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nab", State::malformed, "decimal");
    expect_parse("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
                 State::malformed, "decimal");
}

TEST(HttpResponseParser, RefusesContentLengthWithChunked) {
    expect_parse(
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        State::malformed, "both Content-Length and Transfer-Encoding");
    expect_parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", State::done);
}

TEST(HttpResponseParser, RefusesCodingsOtherThanChunkedAndChunkedIn10) {
    expect_parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                 State::malformed, "only chunked");
    expect_parse(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
        "\r\n0\r\n\r\n",
        State::malformed, "only chunked");
    expect_parse("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", State::malformed,
                 "HTTP/1.0");
}

TEST(HttpResponseParser, RefusesAChunkSizeThatOverflows) {
    expect_parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000001\r\n",
                 State::malformed, "overflows");
    // Control: sixteen hexadecimal digits fit, and are then over the body limit.
    expect_parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n",
                 State::tooLarge, "limit");
}

TEST(HttpResponseParser, RefusesChunkDataOfAnotherSize) {
    expect_parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
                 State::malformed, "not followed by CRLF");
    expect_parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", State::malformed,
                 "hexadecimal size");
    expect_parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 x\r\n", State::malformed,
                 "other than extensions");
}

TEST(HttpResponseParser, RefusesObsFold) {
    expect_parse("HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 0\r\n\r\n",
                 State::malformed, "obs-fold");
}

TEST(HttpResponseParser, RefusesNulAndBareCrAndBareLfInTheHead) {
    const char with_nul[] = "HTTP/1.1 200 OK\r\nX-A: a\0b\r\n\r\n";
    expect_parse(std::string(with_nul, sizeof with_nul - 1), State::malformed, "NUL");
    expect_parse("HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n", State::malformed,
                 "carriage return without a line feed");
    expect_parse("HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", State::malformed,
                 "line feed without a carriage return");
    expect_parse("HTTP/1.1 200 OK\r\nX-A: a\x01\r\n\r\n", State::malformed, "control byte");
}

TEST(HttpResponseParser, RefusesAStatusThatIsNotThreeDigits) {
    expect_parse("HTTP/1.1 20 OK\r\n\r\n", State::malformed, "three digits");
    expect_parse("HTTP/1.1 2000 OK\r\n\r\n", State::malformed, "three digits");
    expect_parse("HTTP/1.1 abc OK\r\n\r\n", State::malformed, "three digits");
    expect_parse("HTTP/1.1 600 Odd\r\n\r\n", State::malformed, "outside 100 to 599");
    expect_parse("HTTP/2 200 OK\r\n\r\n", State::malformed, "HTTP/1.1 or HTTP/1.0");
    expect_parse("SSH-2.0-OpenSSH\r\n\r\n", State::malformed, "does not start HTTP/");
    expect_parse("\r\n", State::malformed, "empty line");
    expect_parse("HTTP/1.1 101 Switching Protocols\r\n\r\n", State::malformed, "101");
    // Control: a status line without a reason phrase is a status line.
    EXPECT_EQ(
        expect_parse("HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n", State::done).response.status,
        404);
}

TEST(HttpResponseParser, RefusesBadHeaderLines) {
    expect_parse("HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", State::malformed, "without a colon");
    expect_parse("HTTP/1.1 200 OK\r\nX A: b\r\n\r\n", State::malformed, "not a token");
    expect_parse("HTTP/1.1 200 OK\r\nX-A : b\r\n\r\n", State::malformed, "not a token");
}

TEST(HttpResponseParser, RefusesMoreHeadersThanTheLimit) {
    Limits limits;
    limits.header_count = 3;
    const std::string three = "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nContent-Length: 0\r\n";
    expect_parse(three + "\r\n", State::done, "", limits);
    expect_parse(three + "D: 4\r\n\r\n", State::malformed, "more than 3 header lines", limits);
    const std::string chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n";
    expect_parse(chunked + "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", State::malformed,
                 "more than 3 trailer lines", limits);
}

TEST(HttpResponseParser, RefusesAHeadOverTheLimit) {
    Limits limits;
    limits.head_bytes = 100;
    const std::string start = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: ";
    expect_parse(start + std::string(100 - start.size() - 4, 'a') + "\r\n\r\n", State::done, "",
                 limits);
    expect_parse(start + std::string(100 - start.size() - 3, 'a') + "\r\n\r\n", State::malformed,
                 "longer than the limit of 100 bytes", limits);
    // Interim heads count towards the same limit: endless 100s cannot be made to cost nothing.
    std::string interims;
    for (int i = 0; i < 5; ++i) interims += "HTTP/1.1 100 Continue\r\n\r\n";
    expect_parse(interims + "HTTP/1.1 204 No Content\r\n\r\n", State::malformed,
                 "longer than the limit", limits);
}

TEST(HttpResponseParser, BodyPastTheLimitIsTooLarge) {
    Limits limits;
    limits.body_bytes = 10;
    expect_parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", State::done, "",
                 limits);
    expect_parse("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", State::tooLarge,
                 "11 bytes announced", limits);
    expect_parse("HTTP/1.1 200 OK\r\n\r\n0123456789x", State::tooLarge, "limit of 10", limits);
    expect_parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n5\r\n",
                 State::tooLarge, "limit of 10", limits);
}

TEST(HttpResponseParser, SaysWhereAClosedResponseStopped) {
    ResponseParser nothing({}, false);
    nothing.finish();
    EXPECT_EQ(nothing.closed_sentence(), "the service closed the connection without answering");

    ResponseParser body({}, false);
    body.feed("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789");
    EXPECT_EQ(body.finish(), State::needMore);
    EXPECT_NE(body.closed_sentence().find("after 10 of the 100 body bytes"), std::string::npos);

    ResponseParser chunks({}, false);
    chunks.feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
    EXPECT_EQ(chunks.finish(), State::needMore);
    EXPECT_NE(chunks.closed_sentence().find("chunked body, after 3 bytes"), std::string::npos);
}

}  // namespace
}  // namespace tea::http
