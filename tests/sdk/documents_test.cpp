// The SDK's documents (tea/documents.hpp) as a plugin built as C++17 sees them: each document
// round-trips exactly, byte strings that are not UTF-8 included, and each decoder refuses a
// malformed document with an error that starts with the field's path. The core reads the same
// documents with the same code (tests/core/exec/exec_plan_test.cpp, tests/core/audit/).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <tea/documents.hpp>
#include <vector>

namespace {

namespace docs = tea::documents;
using nlohmann::json;

docs::LaunchSpec sample_spec() {
    docs::LaunchSpec spec;
    spec.argv = {"cat", std::string{"\xff name"}};
    spec.env = {"PATH=/usr/bin", "LANG=C.UTF-8"};
    spec.cwd = spec.workspace = "/w";
    spec.temp_dir = "/p/run-a/tmp-b";
    spec.home = "/p/run-a/home-c";
    spec.unmade = {spec.temp_dir};
    spec.withhold = {"/w/.tea"};
    spec.read_only = {"/p/run-a/repository-d"};
    spec.read_only_over = {{"/p/run-a/repository-d", "/w/.git"}};
    spec.system_paths = {"/opt/tools"};
    spec.limits = {1, 2, 3};
    spec.runtime_prefix = "/usr";
    spec.helper_dir = "/usr/libexec/tea-evaluate";
    spec.egress = {"/p/run-a/egress-e/connect.sock", 3128, "/usr/libexec/tea-evaluate/shim"};
    spec.observed = true;
    spec.identity = docs::LaunchSpec::Identity{70001, 70001};
    spec.login_files = {{".claude/.credentials.json", std::string{"{\"t\": \"\xfe\0x\"}", 12}}};
    spec.bridge = {"/p/run-a/bridge-f", "/usr/libexec/tea-evaluate/tea-bridge-relay"};
    return spec;
}

// `decode(text)` throws a DocumentError whose message starts with `field`.
template <class Decode>
void expect_refused(Decode decode, const std::string &text, const std::string &field) {
    try {
        (void)decode(text);
        ADD_FAILURE() << "accepted: " << text;
    } catch (const docs::DocumentError &e) {
        EXPECT_EQ(std::string{e.what()}.rfind(field, 0), 0U) << e.what();
    }
}

TEST(Documents, LaunchSpecRoundTripsEveryField) {
    const auto spec = sample_spec();
    const auto back = docs::decode_launch_spec(docs::encode(spec));
    EXPECT_EQ(back.role, "target");
    EXPECT_EQ(back.argv, spec.argv);
    EXPECT_EQ(back.env, spec.env);
    EXPECT_EQ(back.cwd, spec.cwd);
    EXPECT_EQ(back.temp_dir, spec.temp_dir);
    EXPECT_EQ(back.unmade, spec.unmade);
    EXPECT_EQ(back.read_only, spec.read_only);
    ASSERT_EQ(back.read_only_over.size(), 1U);
    EXPECT_EQ(back.read_only_over[0].destination, "/w/.git");
    EXPECT_EQ(back.system_paths, spec.system_paths);
    EXPECT_EQ(back.limits, spec.limits);
    EXPECT_EQ(back.helper_dir, spec.helper_dir);
    EXPECT_EQ(back.egress.port, 3128);
    EXPECT_TRUE(back.observed);
    EXPECT_FALSE(back.staged);
    EXPECT_EQ(back.identity, spec.identity);
    EXPECT_EQ(back.bridge.dir, spec.bridge.dir);
    EXPECT_EQ(back.bridge.relay, spec.bridge.relay);
    ASSERT_EQ(back.login_files.size(), 1U);
    EXPECT_EQ(back.login_files[0].home_path, ".claude/.credentials.json");
    EXPECT_EQ(back.login_files[0].content, spec.login_files[0].content);
    // A byte string that is not UTF-8 travels as base64.
    EXPECT_TRUE(docs::launch_spec_to_json(spec)["argv"][1].contains("base64"));
}

TEST(Documents, LaunchSpecIgnoresUnknownFieldsButRefusesBadKnownOnes) {
    auto doc = docs::launch_spec_to_json(sample_spec());
    doc["fromALaterMinor"] = {1, 2};
    EXPECT_EQ(docs::launch_spec_from_json(doc).argv[0], "cat");
    const auto decode = [](const std::string &text) { return docs::decode_launch_spec(text); };
    const auto with = [&](const char *key, const json &value) {
        auto d = doc;
        d[key] = value;
        return d.dump();
    };
    const auto without = [&](const char *key) {
        auto d = doc;
        d.erase(key);
        return d.dump();
    };
    expect_refused(decode, "{", "the launch spec is not valid JSON");
    expect_refused(decode, "[]", "the launch spec is not a JSON object");
    expect_refused(decode, without("argv"), "argv: missing");
    expect_refused(decode, without("runtime"), "runtime: missing");
    expect_refused(decode, with("argv", "cat"), "argv: expected an array");
    expect_refused(decode, with("env", json::array({7})), "env[0]: expected a string");
    expect_refused(decode, with("role", "judge"), "role: expected");
    expect_refused(decode, with("observed", "yes"), "observed: expected a boolean");
    expect_refused(decode, with("limits", {{"cpuSeconds", -1}}), "limits.cpuSeconds");
    expect_refused(decode, with("identity", {{"uid", 0}, {"gid", 5}}), "identity");
    expect_refused(decode, with("unmade", json::array({"/elsewhere"})), "unmade: /elsewhere");
    expect_refused(decode, with("egress", {{"socket", "/s"}, {"port", 0}, {"shim", "/x"}}),
                   "egress.port");
    expect_refused(decode, with("bridge", "/p/run-a/bridge-f"), "bridge: expected");
    expect_refused(decode, with("bridge", {{"dir", "/p/run-a/bridge-f"}}), "bridge.relay: missing");
    expect_refused(decode, with("bridge", {{"dir", "bridge-f"}, {"relay", "/r"}}),
                   "bridge.dir: expected an absolute path");
    expect_refused(decode, with("bridge", {{"dir", "/d"}, {"relay", ""}}),
                   "bridge.relay: expected an absolute path");
    expect_refused(decode, with("readOnlyOver", json::array({{{"source", "/a"}}})),
                   "readOnlyOver[0].destination: missing");
    // A login file lies inside the home, once, within the cap, and only in a spec with a home.
    const auto file = [&](const std::string &path, const std::string &content = "{}") {
        return with("loginFiles", json::array({{{"homePath", path}, {"content", content}}}));
    };
    for (const char *outside : {"/etc/passwd", "../x", ".claude/../../x", "a//b", "./a", "a/"}) {
        expect_refused(decode, file(outside), "loginFiles[0].homePath");
    }
    expect_refused(decode, file("a", std::string(docs::kMaxLoginFileBytes + 1, 'x')),
                   "loginFiles[0].content");
    expect_refused(decode,
                   with("loginFiles", json::array({{{"homePath", "a"}, {"content", ""}},
                                                   {{"homePath", "a"}, {"content", ""}}})),
                   "loginFiles[1].homePath");
    expect_refused(decode, with("loginFiles", json::array({{{"homePath", "a"}}})),
                   "loginFiles[0].content: missing");
    auto homeless = json::parse(file("a"));
    homeless["home"] = "";
    expect_refused(decode, homeless.dump(), "loginFiles: the spec has no home");
    EXPECT_EQ(docs::decode_launch_spec(file("a", std::string(docs::kMaxLoginFileBytes, 'x')))
                  .login_files[0]
                  .content.size(),
              docs::kMaxLoginFileBytes);
}

docs::ExecPlan sample_plan() {
    docs::ExecPlan plan;
    plan.argv = {"/usr/bin/bwrap", "--args", "11", "--"};
    plan.cwd = "/";
    plan.files = {{11, std::string("a\0b", 3), {}, false},
                  {12, {}, "/usr/libexec/tea-evaluate/tea-sandbox-helper", false},
                  {18, {}, {}, true}};
    plan.confinement = "bubblewrap";
    plan.lend = {true, 999, 995, {"/w"}};
    plan.run_as = {true, 999, 995};
    plan.child = {{3600, 4096, 0}, true};
    plan.report_json = R"({"socketsLeftReachable":["/run/other.sock"],"socketsMasked":2})";
    plan.audit = {"/usr/bin/cat", true, {"/dev/tea-evaluate-tmp", "/tmp"}};
    plan.make_dirs.emplace();
    plan.setup_mark_fd = 15;
    return plan;
}

TEST(Documents, ExecPlanRoundTripsEveryField) {
    auto plan = sample_plan();
    auto back = docs::decode_exec_plan(docs::encode(plan));
    EXPECT_EQ(back.argv, plan.argv);
    EXPECT_EQ(back.files, plan.files);
    EXPECT_EQ(back.lend, plan.lend);
    EXPECT_EQ(back.run_as, plan.run_as);
    EXPECT_EQ(back.child, plan.child);
    EXPECT_EQ(json::parse(back.report_json), json::parse(plan.report_json));
    EXPECT_EQ(back.sockets_left_reachable, std::vector<std::string>{"/run/other.sock"});
    EXPECT_EQ(back.audit.target_start, "/usr/bin/cat");
    EXPECT_TRUE(back.audit.target_start_is_target);
    EXPECT_EQ(back.audit.writable, plan.audit.writable);
    ASSERT_TRUE(back.make_dirs.has_value());
    EXPECT_TRUE(back.make_dirs->empty());
    EXPECT_EQ(back.setup_mark_fd, 15);
    EXPECT_TRUE(docs::has_deferred_files(back));

    // A holder takes the setup mark, so the plan's own files may use its number.
    plan.files.pop_back();
    plan.holder = docs::Holder{{"/usr/bin/bwrap"}, {}, "/", {{11, "x", {}, false}}, 16};
    plan.handoff_fd = 17;
    back = docs::decode_exec_plan(docs::encode(plan));
    ASSERT_TRUE(back.holder.has_value());
    EXPECT_EQ(back.holder->files, plan.holder->files);
    EXPECT_EQ(back.holder->handoff_fd, 16);
    EXPECT_EQ(back.handoff_fd, 17);
}

TEST(Documents, ExecPlanRefusesUnknownFieldsAndBadValuesNamingThem) {
    const auto doc = docs::exec_plan_to_json(sample_plan());
    const auto decode = [](const std::string &text) { return docs::decode_exec_plan(text); };
    const auto with = [&](const char *key, const json &value) {
        auto d = doc;
        d[key] = value;
        return d.dump();
    };
    expect_refused(decode, with("fromALaterMinor", 1), "fromALaterMinor: unknown field");
    expect_refused(decode, with("argv", json::array()), "argv: empty");
    expect_refused(decode, with("env", json::array({"NOEQUALS"})), "env[0]: expected NAME=VALUE");
    expect_refused(decode, with("cwd", "relative"), "cwd: expected an absolute path");
    expect_refused(decode, with("confinement", ""), "confinement: expected a non-empty string");
    expect_refused(decode, with("files", json::array({{{"fd", 2}, {"content", ""}}})),
                   "files[0].fd: expected a unique descriptor");
    expect_refused(decode, with("runAs", {{"uid", 0}, {"gid", 0}}), "runAs: expected");
    expect_refused(decode, with("audit", {{"targetStartKind", "self"}}), "audit.targetStartKind");
    expect_refused(decode, with("audit", {{"writable", json::array({"/"})}}), "audit.writable");
    expect_refused(decode, with("limits", {{"stack", 1}}), "limits.stack: unknown field");
    expect_refused(decode, with("report", json::array()), "report: expected an object");
    expect_refused(decode, with("handoffFd", 17), "holder and handoffFd");
    // The error is a std::invalid_argument too, as the host's earlier reader threw.
    EXPECT_THROW((void)docs::decode_exec_plan("{}"), std::invalid_argument);
}

TEST(Documents, ObserverRequestsRoundTrip) {
    docs::WrapRequest wrap{sample_plan(), "/p/run-a/trace-f"};
    const auto wrap_back = docs::decode_wrap_request(docs::encode(wrap));
    EXPECT_EQ(wrap_back.plan.argv, wrap.plan.argv);
    EXPECT_EQ(wrap_back.trace_dir, wrap.trace_dir);
    auto bad = json::parse(docs::encode(wrap));
    bad["plan"]["cwd"] = "relative";
    expect_refused([](const std::string &t) { return docs::decode_wrap_request(t); }, bad.dump(),
                   "plan.cwd");

    docs::CollectRequest collect{"/p/run-a/trace-f", "/", "/proc/self/fd/12", false};
    auto back = docs::decode_collect_request(docs::encode(collect));
    EXPECT_EQ(back.target_start, collect.target_start);
    EXPECT_FALSE(back.target_start_is_target);
    collect.target_start_is_target = true;
    EXPECT_TRUE(docs::decode_collect_request(docs::encode(collect)).target_start_is_target);
    expect_refused([](const std::string &t) { return docs::decode_collect_request(t); },
                   R"({"traceDir": "/t"})", "initialCwd: missing");
}

TEST(Documents, ObservationStreamsEveryEventAndItsCount) {
    docs::Observation o;
    o.complete = true;
    o.target_started = true;
    o.counters = {{"lines", 12}};
    o.events.push_back({7, "openat", "/w/a", "/w/a", docs::Access::read, true, "", "", "", 3});
    o.events.push_back({8, "execve", std::string{"/w/\xff"}, "", docs::Access::exec, false,
                        "ENOENT", "/w/\"quoted\"", "a link loop\n", 1});
    const auto text = docs::encode(o);
    // Valid JSON as any reader sees it, the distinct count first.
    const auto tree = json::parse(text);
    EXPECT_EQ(tree["distinct"], 2);
    EXPECT_EQ(tree["events"][1]["asked"]["base64"], tea::bytes::base64_encode("/w/\xff"));
    EXPECT_EQ(tree["lines"], 12);

    const auto back = docs::decode_observation(text);
    EXPECT_TRUE(back.complete);
    EXPECT_TRUE(back.target_started);
    ASSERT_EQ(back.events.size(), 2U);
    EXPECT_EQ(back.events[0].count, 3U);
    EXPECT_EQ(back.events[0].access, docs::Access::read);
    EXPECT_EQ(back.events[1].asked, std::string{"/w/\xff"});
    EXPECT_EQ(back.events[1].named, "/w/\"quoted\"");
    EXPECT_EQ(back.events[1].unverified, "a link loop\n");
    EXPECT_EQ(back.events[1].error, "ENOENT");
    ASSERT_EQ(back.counters.size(), 1U);
    EXPECT_EQ(back.counters[0].first, "lines");
}

TEST(Documents, ObservationRefusesMalformedEventsNamingThem) {
    const auto decode = [](const std::string &text) { return docs::decode_observation(text); };
    const std::string event =
        R"("pid": 1, "syscall": "openat", "asked": "/a", "resolved": "/a", "ok": true)";
    expect_refused(decode, R"({"events": []})", "complete: missing");
    expect_refused(decode, R"({"complete": true})", "events: missing");
    expect_refused(decode, R"({"complete": true, "events": [{)" + event + "}]}",
                   "events[0].access: missing");
    expect_refused(decode, R"({"complete": true, "events": [{)" + event + R"(, "access": "x"}]})",
                   "events[0].access: unknown access 'x'");
    expect_refused(
        decode,
        R"({"complete": true, "events": [{)" + event + R"(, "access": "read", "extra": "y"}]})",
        "events[0].extra: unexpected a string");
    expect_refused(
        decode,
        R"({"complete": true, "events": [{)" + event + R"(, "access": "read", "count": 0}]})",
        "events[0].count: expected a positive integer");
    // A reason or syscall that is not text cannot be written: the writer refuses, never corrupts.
    docs::Observation o;
    o.reason = "\xff";
    EXPECT_THROW((void)docs::encode(o), docs::DocumentError);
}

TEST(Documents, DistinctEventsMergeRepeatsAsTheyAreRead) {
    docs::DistinctEvents events{3, 2};
    const auto open = [](int pid, std::string_view asked, std::string_view resolved) {
        return docs::ObservedEventView{
            pid, "openat",           asked, resolved, docs::Access::read, true,
            "",  std::string_view{}, "",    1};
    };
    EXPECT_TRUE(events.add(open(10, "/etc/a", "/etc/a")));
    EXPECT_TRUE(events.add(open(11, "/etc/a", "/etc/a")));
    EXPECT_TRUE(events.add(open(12, "/etc/b", "/etc/b")));
    // A name that spells the other fields stays another access: JSON escaping keeps them apart.
    EXPECT_TRUE(events.add(open(13, R"(/w/a","resolved":"/w/b)", R"(/w/a","resolved":"/w/b)")));
    // A fourth distinct access is past the bound; a repeat of a kept one is still counted.
    EXPECT_FALSE(events.add(open(14, "/etc/c", "/etc/c")));
    EXPECT_TRUE(events.add(open(15, "/etc/a", "/etc/a")));
    EXPECT_EQ(events.size(), 3U);
    docs::Observation rest;
    rest.complete = true;
    const auto o = docs::decode_observation(events.finish(rest));
    ASSERT_EQ(o.events.size(), 3U);
    EXPECT_EQ(o.events[0].pid, 10);
    EXPECT_EQ(o.events[0].count, 3U);
    EXPECT_EQ(o.events[1].asked, "/etc/b");
    EXPECT_EQ(o.events[2].asked, R"(/w/a","resolved":"/w/b)");
    EXPECT_TRUE(o.complete);

    // A count past its room is refused, never written cut short.
    docs::DistinctEvents narrow{10, 1};
    for (int i = 0; i < 10; ++i) {
        narrow.add(open(1, "/x", "/x"));
    }
    EXPECT_THROW((void)narrow.finish(rest), docs::DocumentError);
}

}  // namespace
