#include "exec/exec_plan.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <tea/json_bytes.hpp>
#include <vector>

namespace tea::exec {
namespace {

TEST(ExecPlan, RoundTripsExactBytesIncludingNonUtf8) {
    ExecPlan plan;
    plan.argv = {"/bin/echo", "a b", "quote\"and\\back", "new\nline", std::string{"\xff\xfe bad"}};
    plan.env = {"BASH_FUNC_f%%=() { :; }", "my.setting=1", std::string{"V=\x80"}, "EMPTY="};
    plan.cwd = "/tmp/dir with space";
    plan.files = {{5, std::string("binary\0data\xff", 12), {}}, {6, {}, "/etc/hostname"}};
    plan.confinement = "opt-out";
    const auto back = exec_plan_from_json(to_json(plan));
    EXPECT_EQ(back.argv, plan.argv);
    EXPECT_EQ(back.env, plan.env);
    EXPECT_EQ(back.cwd, plan.cwd);
    ASSERT_EQ(back.files.size(), 2U);
    EXPECT_EQ(back.files[1].path, "/etc/hostname");
    EXPECT_EQ(back.files[0].child_fd, 5);
    EXPECT_EQ(back.files[0].content, plan.files[0].content);
    EXPECT_EQ(back.confinement, "opt-out");
}

TEST(ExecPlan, LaunchSpecRoundTrips) {
    LaunchSpec spec;
    spec.argv = {"cat", std::string{"\xc3\x28"}};
    spec.env = {"A=1"};
    spec.cwd = spec.workspace = "/w";
    spec.temp_dir = "/t";
    spec.home = "/h";
    spec.withhold = {"/w/.tea"};
    spec.read_only = {"/ro"};
    spec.system_paths = {"/opt/x"};
    spec.limits = {1, 2, 3};
    spec.runtime_prefix = "/usr";
    spec.helper_dir = "/usr/libexec/tea-evaluate";
    const auto back = launch_spec_from_json(to_json(spec));
    EXPECT_EQ(back.argv, spec.argv);
    EXPECT_EQ(back.withhold, spec.withhold);
    EXPECT_EQ(back.limits.processes, 3U);
    EXPECT_EQ(back.helper_dir, spec.helper_dir);
}

TEST(ExecPlan, RunAsRoundTrips) {
    ExecPlan plan;
    plan.argv = {"/usr/bin/bwrap"};
    plan.cwd = "/";
    plan.confinement = "bubblewrap";
    plan.run_as = {true, 999, 995};
    const auto back = exec_plan_from_json(to_json(plan));
    EXPECT_TRUE(back.run_as.requested);
    EXPECT_EQ(back.run_as.uid, 999U);
    EXPECT_EQ(back.run_as.gid, 995U);
    plan.run_as = {};
    EXPECT_FALSE(exec_plan_from_json(to_json(plan)).run_as.requested);
}

void expect_refused(const std::string &json, const std::string &field) {
    try {
        (void)exec_plan_from_json(json);
        ADD_FAILURE() << "accepted: " << json;
    } catch (const std::invalid_argument &e) {
        EXPECT_NE(std::string{e.what()}.find(field), std::string::npos) << e.what();
    }
}

TEST(ExecPlan, RefusesMalformedPlans) {
    const std::string ok_tail = R"(, "cwd": "/", "confinement": "x"})";
    expect_refused("not json", "not valid JSON");
    expect_refused("[]", "not a JSON object");
    expect_refused(R"({"argv": [], "env": [])" + ok_tail, "argv");
    expect_refused(R"({"argv": [""], "env": [])" + ok_tail, "argv");
    expect_refused(R"({"argv": ["a\u0000b"], "env": [])" + ok_tail, "argv[0]: holds a NUL");
    expect_refused(R"({"argv": ["a"], "env": ["NOEQUALS"])" + ok_tail, "env[0]");
    expect_refused(R"({"argv": ["a"], "env": ["=v"])" + ok_tail, "env[0]");
    expect_refused(R"({"argv": ["a"], "env": [], "cwd": "rel", "confinement": "x"})", "cwd");
    expect_refused(R"({"argv": ["a"], "env": [], "cwd": "/"})", "confinement");
    expect_refused(R"({"argv": ["a"], "env": [], "cwd": "/", "confinement": "x", "extra": 1})",
                   "extra");
    expect_refused(R"({"argv": ["a"], "env": [], "files": [{"fd": 1, "content": ""}])" + ok_tail,
                   "files[0].fd");
    expect_refused(
        R"({"argv": ["a"], "env": [], "files": [{"fd": 4, "content": ""}, {"fd": 4, "content": ""}])" +
            ok_tail,
        "files[1].fd");
    expect_refused(R"({"argv": [{"base64": "!!"}], "env": [])" + ok_tail, "argv[0]");
    expect_refused(R"({"argv": [7], "env": [])" + ok_tail, "argv[0]");
    // Root's ids would hand the target the host's files: never a plan's identity.
    expect_refused(R"({"argv": ["a"], "env": [], "runAs": {"uid": 0, "gid": 5})" + ok_tail,
                   "runAs");
    expect_refused(R"({"argv": ["a"], "env": [], "runAs": {"uid": 5, "gid": 0})" + ok_tail,
                   "runAs");
    expect_refused(R"({"argv": ["a"], "env": [], "runAs": {"uid": 5})" + ok_tail, "runAs");
    expect_refused(R"({"argv": ["a"], "env": [], "runAs": {"uid": -1, "gid": 5})" + ok_tail,
                   "runAs");
    expect_refused(R"({"argv": ["a"], "env": [], "runAs": {"uid": 4294967295, "gid": 5})" + ok_tail,
                   "runAs");
}

TEST(ExecPlan, AuditHintsRoundTripAndAreChecked) {
    ExecPlan plan;
    plan.argv = {"/bin/true"};
    plan.cwd = "/";
    plan.confinement = "bubblewrap";
    plan.audit.target_start = "/proc/self/fd/12";
    plan.audit.writable = {"/dev/tea-evaluate-tmp", std::string{"/w/\xff"}};
    const auto back = exec_plan_from_json(to_json(plan));
    EXPECT_EQ(back.audit.target_start, plan.audit.target_start);
    EXPECT_EQ(back.audit.writable, plan.audit.writable);

    const std::string head = R"({"argv": ["a"], "env": [], "cwd": "/", "confinement": "x", )";
    expect_refused(head + R"("audit": []})", "audit: expected an object");
    expect_refused(head + R"("audit": {"other": 1}})", "audit.other");
    // A grant of "/" or a relative one would quietly switch the audit of writes off.
    expect_refused(head + R"("audit": {"writable": ["/"]}})", "audit.writable");
    expect_refused(head + R"("audit": {"writable": ["tmp"]}})", "audit.writable");
    expect_refused(head + R"("audit": {"targetStart": "a\u0000b"}})", "audit.targetStart");
}

TEST(ExecPlan, TheReportsSocketsLeftReachableAreReadAndChecked) {
    const std::string head = R"({"argv": ["a"], "env": [], "cwd": "/", "confinement": "x", )";
    const auto plan = exec_plan_from_json(
        head + R"("report": {"socketsMasked": 3, "socketsLeftReachable": ["/run/a.sock", )" +
        R"({"base64": "L3RtcC//LnNvY2s="}]}})");
    EXPECT_EQ(plan.sockets_left_reachable,
              (std::vector<std::string>{"/run/a.sock", std::string{"/tmp/\xff.sock"}}));
    // The rest of the report is the backend's own, repeated as it came.
    EXPECT_EQ(nlohmann::json::parse(plan.report_json)["socketsMasked"], 3);
    EXPECT_TRUE(exec_plan_from_json(head + R"("report": {}})").sockets_left_reachable.empty());
    // A record the runtime cannot read is refused, never taken for "nothing left reachable".
    expect_refused(head + R"("report": {"socketsLeftReachable": 2}})",
                   "report.socketsLeftReachable");
    expect_refused(head + R"("report": {"socketsLeftReachable": [7]}})",
                   "report.socketsLeftReachable");
    expect_refused(head + R"("report": {"socketsLeftReachable": ["a\u0000b"]}})",
                   "report.socketsLeftReachable");
}

TEST(ExecPlan, ChildSetUpAndTargetStartKindRoundTripAndAreChecked) {
    ExecPlan plan;
    plan.argv = {"/usr/bin/bwrap"};
    plan.cwd = "/";
    plan.confinement = "bubblewrap";
    plan.audit.target_start = "/usr/bin/true";
    plan.audit.target_start_is_target = true;
    plan.child.limits = {3600, 4096, 64};
    plan.child.new_session_keyring = true;
    const auto back = exec_plan_from_json(to_json(plan));
    EXPECT_TRUE(back.audit.target_start_is_target);
    EXPECT_EQ(back.child.limits.cpu_seconds, 3600U);
    EXPECT_EQ(back.child.limits.file_size_bytes, 4096U);
    EXPECT_EQ(back.child.limits.processes, 64U);
    EXPECT_TRUE(back.child.new_session_keyring);
    // A 1.0 plan says nothing of them: a launcher, and nothing set in the child.
    plan.audit.target_start_is_target = false;
    plan.child = {};
    const auto old = exec_plan_from_json(to_json(plan));
    EXPECT_FALSE(old.audit.target_start_is_target);
    EXPECT_FALSE(old.child.requested());

    const std::string head = R"({"argv": ["a"], "env": [], "cwd": "/", "confinement": "x", )";
    expect_refused(head + R"("limits": 5})", "limits: expected an object");
    expect_refused(head + R"("limits": {"stack": 1}})", "limits.stack");
    expect_refused(head + R"("limits": {"processes": -1}})", "processes");
    expect_refused(head + R"("newSessionKeyring": "yes"})", "newSessionKeyring");
    expect_refused(head + R"("audit": {"targetStart": "/x", "targetStartKind": "self"}})",
                   "audit.targetStartKind");
}

// (1.10) newSession: written only when asked, so a plan that does not ask reads as it did under
// an older host (which refuses the unknown field); a session alone is not a limit or keyring.
TEST(ExecPlan, NewSessionRoundTripsIsWrittenOnlyWhenAskedAndIsChecked) {
    ExecPlan plan;
    plan.argv = {"/usr/bin/sandbox-exec"};
    plan.cwd = "/";
    plan.confinement = "seatbelt";
    EXPECT_EQ(to_json(plan).find("newSession"), std::string::npos);
    EXPECT_FALSE(exec_plan_from_json(to_json(plan)).child.new_session);
    plan.child.new_session = true;
    const auto doc = nlohmann::json::parse(to_json(plan));
    EXPECT_EQ(doc.at("newSession"), true);
    EXPECT_FALSE(doc.contains("limits"));
    const auto back = exec_plan_from_json(to_json(plan));
    EXPECT_TRUE(back.child.new_session);
    EXPECT_FALSE(back.child.new_session_keyring);
    EXPECT_EQ(back.child, plan.child);
    auto other = plan.child;
    other.new_session = false;
    EXPECT_NE(other, plan.child);  // a staged plan that differs in it differs

    const std::string head = R"({"argv": ["a"], "env": [], "cwd": "/", "confinement": "x", )";
    expect_refused(head + R"("newSession": 1})", "newSession: expected a boolean");
}

TEST(ExecPlan, SetupMarkRoundTripsAndIsChecked) {
    ExecPlan plan;
    plan.argv = {"/usr/bin/bwrap"};
    plan.cwd = "/";
    plan.confinement = "bubblewrap";
    plan.files = {{11, "args", {}}};
    plan.setup_mark_fd = 15;
    EXPECT_EQ(exec_plan_from_json(to_json(plan)).setup_mark_fd, 15);
    // A plan from before 1.2 has none.
    plan.setup_mark_fd = -1;
    EXPECT_EQ(to_json(plan).find("setupMark"), std::string::npos);
    EXPECT_EQ(exec_plan_from_json(to_json(plan)).setup_mark_fd, -1);

    const std::string head = R"({"argv": ["a"], "env": [], "cwd": "/", "confinement": "x", )";
    expect_refused(head + R"("setupMark": 15})", "setupMark");
    expect_refused(head + R"("setupMark": {}})", "setupMark");
    expect_refused(head + R"("setupMark": {"fd": "15"}})", "setupMark");
    // 0-2 are the call's own streams.
    expect_refused(head + R"("setupMark": {"fd": 2}})", "setupMark");
    expect_refused(head + R"("setupMark": {"fd": 256}})", "setupMark");
    expect_refused(head + R"("setupMark": {"fd": 15, "bytes": 2}})", "setupMark");
    // One descriptor cannot be both a file and the mark.
    expect_refused(head + R"("setupMark": {"fd": 11}, "files": [{"fd": 11, "content": ""}]})",
                   "files[0].fd");
}

TEST(ExecPlan, HolderRoundTripsAndIsChecked) {
    LaunchSpec spec;
    spec.argv = {"true"};
    // Said only when true, as a backend before 1.4 never hears of it.
    EXPECT_EQ(to_json(spec).find("observed"), std::string::npos);
    spec.observed = true;
    EXPECT_TRUE(launch_spec_from_json(to_json(spec)).observed);

    ExecPlan plan;
    plan.argv = {"/proc/self/fd/12", "enter"};
    plan.cwd = "/";
    plan.confinement = "bubblewrap";
    plan.files = {{10, "env", {}}};
    plan.setup_mark_fd = 15;
    plan.holder = Holder{{"/usr/bin/bwrap", "--args", "11"}, {}, "/", {{11, "args", {}}}, 16};
    plan.handoff_fd = 17;
    const auto back = exec_plan_from_json(to_json(plan));
    ASSERT_TRUE(back.holder.has_value());
    EXPECT_EQ(back.holder->argv, plan.holder->argv);
    EXPECT_EQ(back.holder->handoff_fd, 16);
    ASSERT_EQ(back.holder->files.size(), 1U);
    EXPECT_EQ(back.holder->files[0].content, "args");
    EXPECT_EQ(back.handoff_fd, 17);
    EXPECT_EQ(back.setup_mark_fd, 15);

    const std::string head = R"({"argv": ["a"], "env": [], "cwd": "/", "confinement": "x", )";
    const std::string holder = R"("holder": {"argv": ["b"], "env": [], "cwd": "/", )";
    // Both ends or neither: a holder no one joins, or a process waiting for no holder.
    expect_refused(head + R"("handoffFd": 17})", "holder and handoffFd");
    expect_refused(head + holder + R"("handoffFd": 16}})", "holder and handoffFd");
    expect_refused(head + holder + R"("handoffFd": 2}, "handoffFd": 17})", "holder.handoffFd");
    expect_refused(head + holder + R"("handoffFd": 16}, "handoffFd": 256})", "handoffFd");
    expect_refused(head + holder + R"("handoffFd": 16, "runAs": {}}, "handoffFd": 17})",
                   "holder.runAs");
    expect_refused(head + R"("holder": {"argv": [], "env": [], "cwd": "/", "handoffFd": 16}, )" +
                       R"("handoffFd": 17})",
                   "holder.argv");
    expect_refused(head + R"("holder": {"argv": ["b"], "env": [], "cwd": "x", "handoffFd": 16}, )" +
                       R"("handoffFd": 17})",
                   "holder.cwd");
    // Within one process a descriptor has one use; the mark is the holder's when there is one.
    expect_refused(head + holder + R"("handoffFd": 16, "files": [{"fd": 16, "content": ""}]}, )" +
                       R"("handoffFd": 17})",
                   "holder.files[0].fd");
    expect_refused(head + holder + R"("handoffFd": 16}, "handoffFd": 17, "setupMark": {"fd": 16}})",
                   "holder.handoffFd");
    expect_refused(head + holder + R"("handoffFd": 16}, "handoffFd": 17, )" +
                       R"("files": [{"fd": 17, "content": ""}]})",
                   "handoffFd");
    // The same number in each of the two processes is two descriptors, and fine.
    EXPECT_NO_THROW(exec_plan_from_json(head + holder + R"("handoffFd": 16}, "handoffFd": 16})"));
}

TEST(ExecPlan, TheCallsOwnIdentityRoundTripsAndIsNeverRoot) {
    LaunchSpec spec;
    spec.argv = {"true"};
    // Said only when set, as a backend before 1.6 never hears of it.
    EXPECT_EQ(to_json(spec).find("identity"), std::string::npos);
    spec.identity = LaunchSpec::Identity{2147418112U, 2147418113U};
    EXPECT_EQ(launch_spec_from_json(to_json(spec)).identity, spec.identity);
    for (const char *bad : {R"({"uid": 0, "gid": 5})", R"({"uid": 5})", R"({"uid": 5, "gid": -1})",
                            R"({"uid": 4294967295, "gid": 5})", R"("5:5")"}) {
        auto doc = nlohmann::json::parse(to_json(spec));
        doc["identity"] = nlohmann::json::parse(bad);
        EXPECT_THROW((void)launch_spec_from_json(doc.dump()), std::invalid_argument) << bad;
    }
}

TEST(ExecPlan, DeferredFilesAndTheStagedSpecRoundTripAndAreChecked) {
    LaunchSpec spec;
    spec.argv = {"true"};
    // Said only when true, as a backend before 1.5 never hears of it.
    EXPECT_EQ(to_json(spec).find("staged"), std::string::npos);
    spec.staged = true;
    EXPECT_TRUE(launch_spec_from_json(to_json(spec)).staged);
    auto doc = nlohmann::json::parse(to_json(spec));
    doc["staged"] = "yes";
    EXPECT_THROW((void)launch_spec_from_json(doc.dump()), std::invalid_argument);

    ExecPlan plan;
    plan.argv = {"/usr/bin/bwrap", "--args", "11"};
    plan.cwd = "/";
    plan.confinement = "bubblewrap";
    plan.files = {{11, {}, {}, true}, {14, "program", {}}};
    const auto back = exec_plan_from_json(to_json(plan));
    ASSERT_EQ(back.files.size(), 2U);
    EXPECT_TRUE(back.files[0].deferred);
    EXPECT_EQ(back.files[0].child_fd, 11);
    EXPECT_FALSE(back.files[1].deferred);
    EXPECT_EQ(back.files[1].content, "program");

    const std::string head = R"({"argv": ["a"], "env": [], "cwd": "/", "confinement": "x", )";
    // A deferred file has no content or path of its own yet, and says so with true alone.
    expect_refused(head + R"("files": [{"fd": 11, "deferred": true, "content": ""}]})", "files[0]");
    expect_refused(head + R"("files": [{"fd": 11, "deferred": true, "path": "/a"}]})", "files[0]");
    expect_refused(head + R"("files": [{"fd": 11, "deferred": false}]})", "files[0]");
    expect_refused(head + R"("files": [{"fd": 11, "deferred": 1}]})", "files[0]");
    // Only the plan's own process is ever started early.
    expect_refused(head + R"("holder": {"argv": ["b"], "env": [], "cwd": "/", "handoffFd": 16, )" +
                       R"("files": [{"fd": 11, "deferred": true}]}, "handoffFd": 17})",
                   "holder.files[0].deferred");
}

TEST(ExecPlan, UnmadeDirectoriesAndMakeDirsRoundTrip) {
    LaunchSpec spec;
    spec.argv = {"true"};
    spec.temp_dir = "/r/run-a/tmp-b";
    spec.home = "/r/run-a/tea-evaluate-target-home-c";
    // A spec whose directories are all made says nothing of them, as before 1.3.
    EXPECT_EQ(to_json(spec).find("unmade"), std::string::npos);
    spec.unmade = {spec.temp_dir, spec.home};
    EXPECT_EQ(launch_spec_from_json(to_json(spec)).unmade, spec.unmade);

    ExecPlan plan;
    plan.argv = {"/usr/bin/bwrap"};
    plan.cwd = "/";
    plan.confinement = "bubblewrap";
    EXPECT_FALSE(exec_plan_from_json(to_json(plan)).make_dirs.has_value());
    // An empty answer is an answer: the backend provides every unmade directory itself.
    plan.make_dirs.emplace();
    const auto empty = exec_plan_from_json(to_json(plan));
    ASSERT_TRUE(empty.make_dirs.has_value());
    EXPECT_TRUE(empty.make_dirs->empty());
    plan.make_dirs = std::vector<std::string>{spec.home};
    EXPECT_EQ(exec_plan_from_json(to_json(plan)).make_dirs, plan.make_dirs);

    const std::string head = R"({"argv": ["a"], "env": [], "cwd": "/", "confinement": "x", )";
    expect_refused(head + R"("makeDirs": "/r"})", "makeDirs");
    expect_refused(head + R"("makeDirs": [1]})", "makeDirs");
}

TEST(ExecPlan, LaunchSpecRoleRoundTripsAndDefaultsToTarget) {
    LaunchSpec spec;
    spec.argv = {"true"};
    spec.cwd = spec.workspace = "/w";
    EXPECT_EQ(launch_spec_from_json(to_json(spec)).role, "target");
    spec.role = "grader";
    spec.read_only = {"/w/.tea", "/w/.git"};
    const auto back = launch_spec_from_json(to_json(spec));
    EXPECT_EQ(back.role, "grader");
    EXPECT_EQ(back.read_only, spec.read_only);

    // A spec written before the role existed is a target's.
    auto doc = nlohmann::json::parse(to_json(spec));
    doc.erase("role");
    EXPECT_EQ(launch_spec_from_json(doc.dump()).role, "target");
}

TEST(ExecPlan, LaunchSpecRefusesAnUnknownRole) {
    LaunchSpec spec;
    spec.argv = {"true"};
    spec.cwd = spec.workspace = "/w";
    auto doc = nlohmann::json::parse(to_json(spec));
    for (const auto &role : {nlohmann::json("judge"), nlohmann::json(""), nlohmann::json("Grader"),
                             nlohmann::json(1), nlohmann::json(nullptr)}) {
        doc["role"] = role;
        try {
            (void)launch_spec_from_json(doc.dump());
            ADD_FAILURE() << "accepted the role " << role.dump();
        } catch (const std::invalid_argument &e) {
            EXPECT_EQ(std::string{e.what()}.rfind("role:", 0), 0U) << e.what();
        }
    }
}

TEST(ExecPlan, LaunchSpecCarriesTheEgressRouteOnlyWhenThereIsOne) {
    LaunchSpec spec;
    spec.argv = {"true"};
    spec.cwd = spec.workspace = "/w";
    EXPECT_EQ(to_json(spec).find("egress"), std::string::npos);
    EXPECT_TRUE(launch_spec_from_json(to_json(spec)).egress.socket.empty());
    spec.egress = {"/p/run-a/egress-b/connect.sock", 3128, "/usr/libexec/tea-evaluate/shim"};
    const auto back = launch_spec_from_json(to_json(spec));
    EXPECT_EQ(back.egress.socket, spec.egress.socket);
    EXPECT_EQ(back.egress.port, 3128);
    EXPECT_EQ(back.egress.shim, spec.egress.shim);
    auto doc = nlohmann::json::parse(to_json(spec));
    doc["egress"]["port"] = 0;
    EXPECT_THROW((void)launch_spec_from_json(doc.dump()), std::invalid_argument);
    doc["egress"] = "x";
    EXPECT_THROW((void)launch_spec_from_json(doc.dump()), std::invalid_argument);
}

TEST(ExecPlan, LaunchSpecCarriesReadOnlyOverOnlyWhenThereIsOne) {
    LaunchSpec spec;
    spec.argv = {"true"};
    spec.cwd = spec.workspace = "/w";
    EXPECT_EQ(to_json(spec).find("readOnlyOver"), std::string::npos);
    spec.read_only_over = {{"/p/run-a/repository-b", "/w/.git"}};
    const auto back = launch_spec_from_json(to_json(spec));
    ASSERT_EQ(back.read_only_over.size(), 1U);
    EXPECT_EQ(back.read_only_over[0].source, "/p/run-a/repository-b");
    EXPECT_EQ(back.read_only_over[0].destination, "/w/.git");
    auto doc = nlohmann::json::parse(to_json(spec));
    doc["readOnlyOver"][0].erase("destination");
    EXPECT_THROW((void)launch_spec_from_json(doc.dump()), std::invalid_argument);
    doc["readOnlyOver"] = "x";
    EXPECT_THROW((void)launch_spec_from_json(doc.dump()), std::invalid_argument);
}

TEST(Base64, DecodesOnlyStrictInput) {
    EXPECT_EQ(bytes::base64_decode("aGk="), "hi");
    EXPECT_EQ(bytes::base64_decode(""), "");
    EXPECT_FALSE(bytes::base64_decode("aGk"));
    EXPECT_FALSE(bytes::base64_decode("a=Gk"));
    EXPECT_FALSE(bytes::base64_decode("aG k"));
    for (int n = 0; n < 300; ++n) {
        std::string s;
        for (int i = 0; i < n; ++i) {
            s += static_cast<char>((i * 37 + n) & 0xff);
        }
        EXPECT_EQ(bytes::base64_decode(bytes::base64_encode(s)), s);
    }
}

TEST(Utf8, RejectsOverlongSurrogatesAndTruncation) {
    EXPECT_TRUE(bytes::is_valid_utf8("plain é ✓ 😀"));
    EXPECT_FALSE(bytes::is_valid_utf8("\xc0\xaf"));          // overlong '/'
    EXPECT_FALSE(bytes::is_valid_utf8("\xed\xa0\x80"));      // surrogate
    EXPECT_FALSE(bytes::is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
    EXPECT_FALSE(bytes::is_valid_utf8("\xe2\x9c"));          // truncated
    EXPECT_FALSE(bytes::is_valid_utf8("\x80"));
}

}  // namespace
}  // namespace tea::exec
