// The grants of a call (core/call/grants.hpp) as the judge applies them: a login's files shown in
// the home are read and refused a write without either being listed, while a refused write of
// another read-only place still is.
#include "call/grants.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "audit/judge.hpp"

namespace tea::call {
namespace {

using audit::Access;
using audit::ObservedAccess;

constexpr const char *kHome = "/priv/run-1/tea-evaluate-target-home-a";
constexpr const char *kLogin = "/priv/run-1/tea-evaluate-target-home-a/.claude/.credentials.json";

exec::LaunchSpec login_spec() {
    exec::LaunchSpec spec;
    spec.argv = {"/bin/true"};
    spec.workspace = spec.cwd = "/work/ws";
    spec.temp_dir = "/priv/run-1/tmp-a";
    spec.home = kHome;
    spec.runtime_prefix = "/opt/tea-evaluate";
    spec.login_files = {{".claude/.credentials.json", "{}"}};
    return spec;
}

ObservedAccess access(Access kind, const std::string &path, bool success, std::string error = {}) {
    ObservedAccess a;
    a.pid = 7;
    a.syscall = kind == Access::remove ? "unlinkat" : "openat";
    a.path_asked = path;
    a.path_resolved = success ? path : std::string{};
    a.access = kind;
    a.success = success;
    a.error = std::move(error);
    return a;
}

std::vector<audit::Finding> judged(const audit::Grants &grants,
                                   const std::vector<ObservedAccess> &events) {
    audit::Judge judge{grants};
    for (const auto &e : events) {
        judge.observe(e);
    }
    return judge.findings();
}

TEST(CallGrants, ALoginFileInTheHomeIsAReadOnlyLogin) {
    const auto g = call_grants(login_spec(), exec::ExecPlan{}, "/priv");
    EXPECT_EQ(g.read_only_logins, std::vector<std::string>{kLogin});
    auto without = login_spec();
    without.login_files.clear();
    EXPECT_TRUE(call_grants(without, exec::ExecPlan{}, "/priv").read_only_logins.empty());
}

TEST(CallGrants, TheLoginsReadAndRefusedWriteAreNotListedAndAnotherRefusedWriteIs) {
    const auto g = call_grants(login_spec(), exec::ExecPlan{}, "/priv");
    // What a CLI does with its login: reads it, then tries to save a refreshed token.
    const auto login = judged(
        g, {access(Access::read, kLogin, true), access(Access::write, kLogin, false, "EROFS"),
            access(Access::remove, kLogin, false, "EBUSY")});
    EXPECT_TRUE(login.empty()) << login.front().path << ": " << login.front().reason;
    // Control: the same refused write of another read-only place is listed.
    const auto other = judged(g, {access(Access::write, "/etc/tea-login-probe", false, "EROFS")});
    ASSERT_EQ(other.size(), 1U);
    EXPECT_EQ(other[0].path, "/etc/tea-login-probe");
    EXPECT_TRUE(other[0].refused);
}

// The runtime's prefix, which the view shows at its own path even under a /tmp of the call's own,
// is where the host shows what the target saw there; never when it is or holds a place of the
// view's own, or lies under a cover.
TEST(HostView, TheRuntimesPrefixIsSharedReadOnlyUnlessTheViewOwnsIt) {
    exec::ExecPlan plan;
    plan.audit.writable = {"/dev/tea-evaluate-tmp", "/tmp", "/var/tmp"};
    auto spec = login_spec();
    spec.withhold = {"/work/ws/.tea"};
    const auto shared = [&](const std::string &prefix) {
        spec.runtime_prefix = prefix;
        const auto read_only = host_view(spec, plan, "/priv").shared_read_only;
        return std::find(read_only.begin(), read_only.end(), prefix) != read_only.end();
    };
    EXPECT_TRUE(shared("/tmp/clone/build/release"));
    EXPECT_TRUE(shared("/opt/tea-evaluate"));
    EXPECT_FALSE(shared("/tmp"));                   // the call's own /tmp
    EXPECT_FALSE(shared("/var"));                   // holds the call's own /var/tmp
    EXPECT_FALSE(shared("/"));                      // no installation
    EXPECT_FALSE(shared("/priv/run-1/x"));          // under the private root's cover
    EXPECT_FALSE(shared("/work/ws/.tea/runtime"));  // under a withheld path's cover
    EXPECT_FALSE(shared(""));
    EXPECT_FALSE(shared("relative/prefix"));
}

}  // namespace
}  // namespace tea::call
