// The log-stream parser on recorded ndjson lines (corpus/README.md), and the audit of a followed
// log: the call's refusals between the canaries, and each way the channel becomes lossy.
#include "log_parser.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "log_audit.hpp"

namespace tea::logstream {
namespace {

std::vector<std::string> recorded_lines() {
    std::ifstream in{std::string{TEA_LOGSTREAM_CORPUS_DIR} + "/recorded.ndjson"};
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) {
        out.push_back(line);
    }
    return out;
}

TEST(LogParser, EachRecordedKindIsToldApart) {
    const auto lines = recorded_lines();
    ASSERT_EQ(lines.size(), 14U);
    const std::vector<LineKind> expected{
        LineKind::unrelated,  LineKind::violation, LineKind::violation, LineKind::violation,
        LineKind::violation,  LineKind::violation, LineKind::violation, LineKind::lost,
        LineKind::overloaded, LineKind::unrelated, LineKind::unrelated, LineKind::malformed,
        LineKind::malformed,  LineKind::malformed};
    for (std::size_t i = 0; i < lines.size(); ++i) {
        EXPECT_EQ(static_cast<int>(parse_log_line(lines[i]).kind), static_cast<int>(expected[i]))
            << "line " << i + 1 << ": " << lines[i];
    }
}

TEST(LogParser, AViolationGivesItsProcessPidOperationAndPath) {
    const auto lines = recorded_lines();
    const auto read = parse_log_line(lines[1]);
    EXPECT_EQ(read.violation.process, "cat");
    EXPECT_EQ(read.violation.pid, 4242);
    EXPECT_EQ(read.violation.action, "deny");
    EXPECT_EQ(read.violation.operation, "file-read-data");
    EXPECT_EQ(read.violation.path, "/Users/dev/.ssh/id_ed25519");
    EXPECT_EQ(read.timestamp, "2026-12-06 12:00:00.123456+0000");
    // A name holding parentheses, a path holding a space and non-ASCII (escaped in the JSON).
    const auto parens = parse_log_line(lines[2]);
    EXPECT_EQ(parens.violation.process, "node (v22)");
    EXPECT_EQ(parens.violation.pid, 5151);
    EXPECT_EQ(parens.violation.path, "/Users/dev/My Projects/\xc3\xa9t\xc3\xa9.txt");
    EXPECT_EQ(parse_log_line(lines[3]).violation.operation, "network-outbound");
    EXPECT_EQ(parse_log_line(lines[5]).violation.path, "com.apple.SecurityServer");
    EXPECT_EQ(parse_log_line(lines[6]).violation.action, "allow");
    EXPECT_EQ(parse_log_line(lines[7]).lost, 37U);
}

TEST(LogParser, HostileLinesNeverCrash) {
    for (const std::string &line :
         {std::string{}, std::string{"{"}, std::string{"{\"eventMessage\":\"Sandbox: x("},
          std::string{"{\"eventMessage\":\"Sandbox: x(99999999999) deny(1) f /p\","
                      "\"senderImagePath\":\"Sandbox\"}"},
          std::string{"{\"eventMessage\":\"Sandbox: (1) deny(1) f /p\",\"senderImagePath\":"
                      "\"Sandbox\"}"},
          std::string{
              "{\"eventMessage\":\"Sandbox: x(1) deny(1\",\"senderImagePath\":\"Sandbox\"}"},
          std::string{"{\"eventMessage\":7,\"eventType\":[1,{\"a\":2}]}"}, std::string{"\xff\xfe"},
          std::string{"{\"eventMessage\":\"\xff\"}"}, std::string(100000, '[')}) {
        const auto parsed = parse_log_line(line);
        EXPECT_NE(static_cast<int>(parsed.kind), static_cast<int>(LineKind::violation)) << line;
    }
}

std::string report(const std::string &path, int pid = 10) {
    return R"({"eventType":"logEvent","senderImagePath":"\/System\/Library\/Extensions\/Sandbox.kext\/Contents\/MacOS\/Sandbox","eventMessage":"Sandbox: t()" +
           std::to_string(pid) + ") deny(1) file-read-data " + path + "\"}\n";
}

const std::vector<Canary> kCanaries{{"/t/canary-0"}, {"/t/canary-1"}};

TEST(LogAudit, RefusalsBetweenTheCanariesAreTheCallsAndTheChannelIsComplete) {
    const auto o = audit_log(report("/before") + report("/t/canary-0") + report("/secret") +
                                 report("/secret") + report("/secret", 11) + report("/t/canary-1") +
                                 report("/after"),
                             kCanaries);
    EXPECT_TRUE(o.complete) << o.reason;
    ASSERT_EQ(o.events.size(), 2U);
    EXPECT_EQ(o.events[0].asked, "/secret");
    EXPECT_EQ(o.events[0].count, 2U);
    EXPECT_EQ(o.events[0].error, "EPERM");
    EXPECT_EQ(o.events[0].access, documents::Access::read);
    EXPECT_FALSE(o.events[0].ok);
    EXPECT_EQ(o.events[1].pid, 11);
}

TEST(LogAudit, AMissingCanaryMakesTheChannelLossyAndKeepsWhatFollows) {
    const auto o = audit_log(report("/t/canary-0") + report("/secret"), kCanaries);
    EXPECT_FALSE(o.complete);
    EXPECT_NE(o.reason.find("delivered 1 of 2 canary reads"), std::string::npos) << o.reason;
    ASSERT_EQ(o.events.size(), 1U);  // no closing canary: the rest is taken as the call's
}

TEST(LogAudit, LostEventsOverloadAndUnreadableLinesMakeItLossy) {
    const auto bracket = [](const std::string &middle) {
        return report("/t/canary-0") + middle + report("/t/canary-1");
    };
    auto o = audit_log(bracket(R"({"eventType":"lossEvent","eventMessage":"lost 5 messages"})"
                               "\n"),
                       kCanaries);
    EXPECT_FALSE(o.complete);
    EXPECT_NE(o.reason.find("reported 5 lost events"), std::string::npos) << o.reason;
    o = audit_log(
        bracket(
            R"({"senderImagePath":"Sandbox","eventMessage":"Sandbox: 9 duplicate reports for t"})"
            "\n"),
        kCanaries);
    EXPECT_FALSE(o.complete);
    EXPECT_NE(o.reason.find("logOverloaded"), std::string::npos) << o.reason;
    o = audit_log(bracket("{\"eventMessage\":\"Sandbox: t(1) deny(1) file-read-data /cut\n"),
                  kCanaries);
    EXPECT_FALSE(o.complete);
    EXPECT_NE(o.reason.find("1 lines of the log could not be read"), std::string::npos) << o.reason;
    EXPECT_TRUE(audit_log(bracket(""), kCanaries).complete);  // the positive control
}

TEST(LogAudit, ALogWhoseLastLineIsCutShortIsLossy) {
    // The stream ended mid-line (the follower stopped, the disk filled): no newline, half a report.
    const auto whole = report("/t/canary-0") + report("/secret") + report("/t/canary-1");
    const auto cut = whole + report("/after").substr(0, 60);
    const auto o = audit_log(cut, kCanaries);
    EXPECT_FALSE(o.complete);
    EXPECT_NE(o.reason.find("1 lines of the log could not be read"), std::string::npos) << o.reason;
    ASSERT_EQ(o.events.size(), 1U);  // what was whole is still read
    EXPECT_EQ(o.events[0].asked, "/secret");
    EXPECT_TRUE(audit_log(whole, kCanaries).complete) << audit_log(whole, kCanaries).reason;
}

TEST(LogAudit, TheFollowersRecordIsReadWithoutTrustingIt) {
    EXPECT_FALSE(read_follow_record("").followed);
    EXPECT_FALSE(read_follow_record("{\"followed\":true}").followed);  // no canary
    EXPECT_FALSE(read_follow_record("{\"followed\":true,\"canaries\":[{}]}").followed);
    const auto r =
        read_follow_record(R"({"followed":true,"canaries":[{"path":"/a"},{"path":"/b"}]})");
    EXPECT_TRUE(r.followed);
    ASSERT_EQ(r.canaries.size(), 2U);
    EXPECT_EQ(r.canaries[1].path, "/b");
    const auto no = read_follow_record(R"({"followed":false,"reason":"no log"})");
    EXPECT_FALSE(no.followed);
    EXPECT_EQ(no.reason, "no log");
}

}  // namespace
}  // namespace tea::logstream
