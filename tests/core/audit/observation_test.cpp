#include "audit/observation.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tea::audit {
namespace {

Grants grants() {
    auto g = default_os_grants();
    g.workspace_like = {"/w"};
    g.always_listed = {"/w/.tea"};
    return g;
}

TEST(Observation, ParsesEventsWithByteStringPaths) {
    const auto o = observation_from_json(R"({"complete": true, "reason": "", "targetStarted": true,
        "events": [{"pid": 7, "syscall": "openat", "asked": "/srv/x", "resolved": "/srv/x",
                    "access": "read", "ok": true, "error": "", "count": 3},
                   {"pid": 7, "syscall": "openat", "asked": {"base64": "L3Nydi//"},
                    "resolved": "", "access": "write", "ok": false, "error": "EROFS"}]})");
    ASSERT_EQ(o.events.size(), 2U);
    EXPECT_TRUE(o.complete);
    EXPECT_TRUE(o.target_started);
    EXPECT_EQ(o.counts[0], 3U);
    EXPECT_EQ(o.counts[1], 1U);
    EXPECT_EQ(o.events[1].path_asked, std::string{"/srv/\xff"});
    EXPECT_EQ(o.events[1].access, Access::write);
    EXPECT_EQ(o.events[1].error, "EROFS");
}

TEST(Observation, RefusesMalformedDocumentsNamingTheField) {
    const auto refused = [](const std::string &text, const std::string &field) {
        try {
            (void)observation_from_json(text);
            ADD_FAILURE() << "accepted: " << text;
        } catch (const std::invalid_argument &e) {
            EXPECT_NE(std::string{e.what()}.find(field), std::string::npos) << e.what();
        }
    };
    refused("", "not a JSON object");
    refused("[1]", "not a JSON object");
    refused(R"({"events": []})", "complete");
    refused(R"({"complete": "yes", "events": []})", "complete");
    refused(R"({"complete": true})", "events");
    refused(R"({"complete": true, "events": {}})", "events");
    refused(R"({"complete": true, "events": [{"pid": 1}]})", "events[0].");
    refused(R"({"complete": true, "events": [{"pid": 1, "ok": true, "access": "peek",
        "syscall": "x", "asked": "/a", "resolved": "/a"}]})",
            "unknown access 'peek'");
    refused(R"({"complete": true, "events": [{"pid": 1, "ok": true, "access": "read",
        "syscall": "x", "asked": "/a", "resolved": "/a", "count": 0}]})",
            "count");
    refused(R"({"complete": true, "events": [{"pid": 1, "ok": true, "access": "read",
        "syscall": "x", "asked": {"base64": "!"}, "resolved": "/a"}]})",
            "events[0].asked");
}

TEST(Observation, HostileDocumentsAreRefusedNeverCrash) {
    const std::string event =
        R"({"pid": 1, "ok": true, "access": "read", "syscall": "x", "asked": "/a", "resolved": "/a"})";
    const std::vector<std::string> texts{
        std::string{"7"},
        std::string{"\"x\""},
        std::string{"null"},
        std::string(100000, '['),
        std::string(100000, '{'),
        R"({"complete": true, "events": [[]]})",
        R"({"complete": true, "events": [)" + event + R"(], "events": []})",
        R"({"complete": true, "events": [{"pid": 1, "asked": {"base64": "YQ==", "x": 1}}]})",
        R"({"complete": true, "events": [{"pid": 1, "asked": {}}]})",
        R"({"complete": true, "events": [{"pid": -1}]})",
        R"({"complete": true, "events": [{"pid": 1.5}]})",
        R"({"complete": true, "events": [{"argv": ["a"]}]})",
        R"({"complete": true, "events": [)" + event.substr(0, event.size() - 1),
    };
    for (const auto &text : texts) {
        EXPECT_THROW((void)observation_from_json(text), std::invalid_argument)
            << text.substr(0, 80);
    }
    // Counters the runtime does not read are accepted at the top level.
    EXPECT_NO_THROW((void)observation_from_json(R"({"complete": true, "lines": 12, "events": [)" +
                                                event + "]}"));
}

TEST(Observation, JudgedResultListsOutsideReadsAndCountsEveryRepeat) {
    Observation o;
    o.complete = true;
    o.target_started = true;
    o.events = {{1, "openat", "/srv/key", "/srv/key", Access::read, true, "", {}, {}},
                {1, "openat", "/w/a", "/w/a", Access::read, true, "", {}, {}},
                {1, "openat", "/w/.tea/s", "/w/.tea/s", Access::read, false, "ENOENT", {}, {}}};
    o.counts = {2, 5, 1};
    const auto r = judge_observation(o, grants(), "strace");
    EXPECT_TRUE(r.audited);
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.events, 8U);
    ASSERT_EQ(r.findings.size(), 2U);
    EXPECT_EQ(r.findings[0].path, "/srv/key");
    EXPECT_EQ(r.findings[1].path, "/w/.tea/s");
    const auto j = to_json(r);
    EXPECT_EQ(j["findings"].size(), 2U);
    EXPECT_EQ(j["observer"], "strace");
}

TEST(Observation, AnIncompleteOrPathlessObservationIsNotComplete) {
    Observation o;
    o.complete = true;
    o.events = {{1, "openat", "relative", "", Access::read, true, "", {}, {}}};
    o.counts = {1};
    const auto r = judge_observation(o, grants(), "strace");
    EXPECT_FALSE(r.complete) << "a path the observer lost could have been anything";
    EXPECT_NE(r.reason.find("no usable path"), std::string::npos);

    Observation lossy;
    lossy.complete = false;
    lossy.reason = "cut short";
    const auto l = judge_observation(lossy, grants(), "strace");
    EXPECT_FALSE(l.complete);
    EXPECT_EQ(l.reason, "cut short");
}

TEST(Observation, AnUnauditedResultCarriesNoList) {
    AuditResult r;
    r.why_not = "opt-out";
    const auto j = to_json(r);
    EXPECT_FALSE(j["audited"].get<bool>());
    EXPECT_FALSE(j.contains("findings"));
}

}  // namespace
}  // namespace tea::audit
