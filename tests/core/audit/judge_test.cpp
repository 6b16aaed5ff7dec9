// Tests of the audit judge. Each rule that keeps an access off the list comes with a positive
// control: the same access, without the grant or the condition that excused it, is listed.
#include "audit/judge.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// Counts allocations while a test asks, to hold observe() to its promise of allocating nothing
// for a granted access.
namespace {
std::atomic<bool> g_counting{false};
std::atomic<std::size_t> g_allocations{0};
}  // namespace

// The replacement pairs malloc with free on purpose; GCC cannot see that once
// it inlines them into a new-expression's caller.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void *operator new(std::size_t size) {
    if (g_counting.load(std::memory_order_relaxed)) {
        g_allocations.fetch_add(1, std::memory_order_relaxed);
    }
    if (void *p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void operator delete(void *p) noexcept {
    std::free(p);
}
void operator delete(void *p, std::size_t) noexcept {
    std::free(p);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace {

using tea::audit::Access;
using tea::audit::default_os_grants;
using tea::audit::Finding;
using tea::audit::Grants;
using tea::audit::Judge;
using tea::audit::ObservedAccess;

std::string syscall_of(Access access) {
    switch (access) {
        case Access::read:
        case Access::write:
            return "openat";
        case Access::exec:
            return "execve";
        case Access::list:
            return "getdents64";
        case Access::readlink:
            return "readlink";
        case Access::create:
            return "mkdir";
        case Access::remove:
            return "unlinkat";
        case Access::metadata:
            return "newfstatat";
        case Access::other:
            return "chdir";
    }
    return "?";
}

// A successful access; the real path is the asked one unless a link leads elsewhere.
ObservedAccess ok(Access access, std::string asked, std::string resolved = {}) {
    ObservedAccess a;
    a.pid = 42;
    a.syscall = syscall_of(access);
    a.path_resolved = resolved.empty() ? asked : std::move(resolved);
    a.path_asked = std::move(asked);
    a.access = access;
    a.success = true;
    return a;
}

// A failed access: no fd came back, so the observer knows no resolved path.
ObservedAccess failed(Access access, std::string asked, std::string error) {
    ObservedAccess a;
    a.pid = 42;
    a.syscall = syscall_of(access);
    a.path_asked = std::move(asked);
    a.access = access;
    a.success = false;
    a.error = std::move(error);
    return a;
}

// The grants of a call as the runtime would set them up: a workspace, the call's temp directory
// at its host path and its mount, a home under the private root, the runtime, systemPaths that
// include the project (to show the always-listed folders inside it stay listed).
Grants standard() {
    Grants g = default_os_grants();
    g.workspace_like = {"/work/ws", "/priv/run-1/tmp-a", "/priv/run-1/home-a",
                        "/repo/.git/worktrees/wt"};
    g.call_own = {"/dev/tea-evaluate-tmp"};
    g.runtime = {"/opt/tea-evaluate", "/opt/node"};
    g.system_paths = {"/opt/rules", "/repo"};
    g.read_only_logins = {"/host/u/.claude/.credentials.json"};
    g.always_listed = {"/repo/.tea", "/repo/.git", "/priv"};
    g.always_listed_exceptions = {"/repo/.git/worktrees/wt", "/priv/run-1/home-a",
                                  "/priv/run-1/tmp-a"};
    return g;
}

std::vector<Finding> judge(const Grants &grants, const std::vector<ObservedAccess> &events) {
    Judge j(grants);
    for (const auto &e : events) j.observe(e);
    return j.findings();
}

std::vector<Finding> judge(const std::vector<ObservedAccess> &events) {
    return judge(standard(), events);
}

std::vector<std::string> paths(const std::vector<Finding> &findings) {
    std::vector<std::string> out;
    for (const auto &f : findings) out.push_back(f.path);
    return out;
}

bool listed(const Grants &grants, const ObservedAccess &a) {
    return !judge(grants, {a}).empty();
}
bool listed(const ObservedAccess &a) {
    return listed(standard(), a);
}

using Paths = std::vector<std::string>;

// ---- Successful reads, execs, listings and link reads outside the grants ----------------------

TEST(JudgeRead, ReadOutsideTheGrantsIsListed) {
    const auto f = judge({ok(Access::read, "/home/u/.ssh/id_rsa")});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].path, "/home/u/.ssh/id_rsa");
    EXPECT_EQ(f[0].reason, "read outside the grants");
    EXPECT_EQ(f[0].syscalls, Paths{"openat"});
    EXPECT_EQ(f[0].count, 1U);
    EXPECT_FALSE(f[0].refused);
}

TEST(JudgeRead, ReadInTheWorkspaceIsNotListedAndIsWithoutTheGrant) {
    const auto read = ok(Access::read, "/work/ws/src/main.c");
    EXPECT_FALSE(listed(read));
    Grants g = standard();
    g.workspace_like.clear();
    EXPECT_TRUE(listed(g, read));  // positive control
}

TEST(JudgeRead, ReadInTheTempDirAndItsMountAndTheHomeIsNotListed) {
    EXPECT_FALSE(listed(ok(Access::read, "/priv/run-1/tmp-a/x")));
    EXPECT_FALSE(listed(ok(Access::read, "/dev/tea-evaluate-tmp/x")));
    EXPECT_FALSE(listed(ok(Access::read, "/priv/run-1/home-a/.bashrc")));
}

TEST(JudgeRead, ExecOutsideTheGrantsIsListedAsARead) {
    const auto f = judge({ok(Access::exec, "/home/u/bin/tool")});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].reason, "exec outside the grants");
    EXPECT_EQ(f[0].syscalls, Paths{"execve"});
}

TEST(JudgeRead, ExecOfTheRuntimeIsNotListedAndIsWithoutTheGrant) {
    const auto exec = ok(Access::exec, "/opt/node/bin/node");
    EXPECT_FALSE(listed(exec));
    Grants g = standard();
    g.runtime.clear();
    EXPECT_TRUE(listed(g, exec));
}

TEST(JudgeRead, ExecOfAnOsBinaryIsNotListedAndIsWithoutTheOsDirs) {
    const auto exec = ok(Access::exec, "/usr/bin/git");
    EXPECT_FALSE(listed(exec));
    Grants g = standard();
    g.os_dirs.clear();
    EXPECT_TRUE(listed(g, exec));
}

TEST(JudgeRead, DirectoryListingOutsideTheGrantsIsListed) {
    const auto f = judge({ok(Access::list, "/home/u")});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].reason, "directory listing outside the grants");
    EXPECT_EQ(f[0].syscalls, Paths{"getdents64"});
}

TEST(JudgeRead, DirectoryListingOfAnOsDirIsNotListedAndIsWithoutTheOsDirs) {
    const auto list = ok(Access::list, "/usr/share/zoneinfo");
    EXPECT_FALSE(listed(list));
    Grants g = standard();
    g.os_dirs.clear();
    EXPECT_TRUE(listed(g, list));
}

TEST(JudgeRead, LinkReadOutsideTheGrantsIsListed) {
    const auto f = judge({ok(Access::readlink, "/home/u/current")});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].reason, "link read outside the grants");
}

TEST(JudgeRead, LinkReadInTheOsDirsIsNotListedAndIsWithoutThem) {
    const auto readlink = ok(Access::readlink, "/etc/localtime");
    EXPECT_FALSE(listed(readlink));
    Grants g = standard();
    g.os_dirs.clear();
    EXPECT_TRUE(listed(g, readlink));
}

TEST(JudgeRead, SystemPathsAreGrantedAndListedWithoutTheDeclaration) {
    const auto read = ok(Access::read, "/opt/rules/default.yml");
    EXPECT_FALSE(listed(read));
    Grants g = standard();
    g.system_paths.clear();
    EXPECT_TRUE(listed(g, read));
}

TEST(JudgeRead, OptIsNotAnOsDir) {
    // Third-party software is declared in systemPaths, not granted wholesale.
    EXPECT_TRUE(listed(ok(Access::read, "/opt/other/lib.so")));
}

// ---- Failed reads and metadata probes ---------------------------------------------------------

TEST(JudgeProbe, ReadOfAMissingFileIsNotListedAndASuccessfulOneIs) {
    EXPECT_FALSE(listed(failed(Access::read, "/home/u/.npmrc", "ENOENT")));
    EXPECT_FALSE(listed(failed(Access::read, "/home/u/file/x", "ENOTDIR")));
    EXPECT_TRUE(listed(ok(Access::read, "/home/u/.npmrc")));
}

TEST(JudgeProbe, ReadRefusedByPermissionsIsNotListed) {
    // Nothing was read; on Linux only successful opens are isolation findings.
    EXPECT_FALSE(listed(failed(Access::read, "/root/.ssh/id_rsa", "EACCES")));
    EXPECT_FALSE(listed(failed(Access::exec, "/home/u/bin/tool", "EACCES")));
}

TEST(JudgeProbe, FailedExecOfAPathSearchIsNotListed) {
    EXPECT_FALSE(listed(failed(Access::exec, "/home/u/.local/bin/git", "ENOENT")));
}

TEST(JudgeProbe, MetadataProbeIsNotListedAndAReadOfTheSameFileIs) {
    EXPECT_FALSE(listed(ok(Access::metadata, "/root/.ssh/id_rsa")));
    EXPECT_FALSE(listed(failed(Access::metadata, "/root/.ssh/id_rsa", "EACCES")));
    EXPECT_TRUE(listed(ok(Access::read, "/root/.ssh/id_rsa")));
}

TEST(JudgeProbe, OtherAccessesOutsideTheGrantsAreNotListed) {
    EXPECT_FALSE(listed(ok(Access::other, "/root")));
}

// ---- Writes ------------------------------------------------------------------------------------

TEST(JudgeWrite, RefusedWriteUnderEtcIsListed) {
    const auto f = judge({failed(Access::write, "/etc/hosts", "EROFS")});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].path, "/etc/hosts");
    EXPECT_EQ(f[0].reason, "write refused by the confinement");
    EXPECT_TRUE(f[0].refused);
}

TEST(JudgeWrite, EveryRefusalErrorAndWriteKindIsListed) {
    for (const char *error : {"EROFS", "EACCES", "EPERM"}) {
        for (Access kind : {Access::write, Access::create, Access::remove}) {
            EXPECT_TRUE(listed(failed(kind, "/usr/lib/x", error))) << error;
        }
    }
}

TEST(JudgeWrite, FailureThatIsNoRefusalIsNotListed) {
    EXPECT_FALSE(listed(failed(Access::create, "/nonexistent/dir/x", "ENOENT")));
    EXPECT_FALSE(listed(failed(Access::create, "/usr", "EEXIST")));
    EXPECT_FALSE(listed(failed(Access::write, "/usr/lib", "EISDIR")));
}

TEST(JudgeWrite, SuccessfulWriteInTheWorkspaceIsNotListedAndIsWithoutTheGrant) {
    const auto write = ok(Access::write, "/work/ws/out.txt");
    EXPECT_FALSE(listed(write));
    Grants g = standard();
    g.workspace_like.clear();
    const auto f = judge(g, {write});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].reason, "write outside the writable grants");
    EXPECT_FALSE(f[0].refused);
}

TEST(JudgeWrite, RefusedWriteInTheWorkspaceIsNotListedAndIsWithoutTheGrant) {
    // A read-only file in the checkout refuses by its own mode, not by the confinement.
    const auto write = failed(Access::write, "/work/ws/.git/objects/ab/cdef", "EACCES");
    EXPECT_FALSE(listed(write));
    Grants g = standard();
    g.workspace_like.clear();
    EXPECT_TRUE(listed(g, write));
}

// A /tmp of the call's own (the bubblewrap backend's) is written and read like the workspace; a
// grant the view binds back inside it decides for what lies beneath: a refused write into a
// read-only system path there is the mechanism's, and listed, while the workspace there keeps
// its own rule.
TEST(JudgeWrite, AGrantInsideAPlaceOfTheCallsOwnDecidesBeneathIt) {
    Grants g = standard();
    g.call_own.emplace_back("/tmp");
    g.workspace_like.emplace_back("/tmp/a/ws");
    g.system_paths.emplace_back("/tmp/a/tools");
    EXPECT_FALSE(listed(g, ok(Access::write, "/tmp/scratch")));
    EXPECT_FALSE(listed(g, ok(Access::read, "/tmp/scratch")));
    EXPECT_FALSE(listed(g, failed(Access::write, "/tmp/a/ws/read-only.txt", "EACCES")));
    EXPECT_FALSE(listed(g, ok(Access::read, "/tmp/a/tools/bin/cc")));
    const auto into_tools = failed(Access::create, "/tmp/a/tools/planted", "EROFS");
    const auto f = judge(g, {into_tools});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].reason, "write refused by the confinement");
    EXPECT_TRUE(listed(g, ok(Access::write, "/tmp/a/tools/planted")));
    // Controls: without the place of its own, /tmp grants nothing; without the system path, the
    // refused write lies in the call's own /tmp, refused by a file's own mode.
    Grants bare = standard();
    EXPECT_TRUE(listed(bare, ok(Access::write, "/tmp/scratch")));
    EXPECT_TRUE(listed(bare, ok(Access::read, "/tmp/scratch")));
    Grants no_tools = g;
    no_tools.system_paths.pop_back();
    EXPECT_FALSE(listed(no_tools, into_tools));
}

TEST(JudgeWrite, SuccessfulWriteOutsideTheWritableGrantsIsListed) {
    // The confinement did not hold: a read grant is no write grant.
    EXPECT_TRUE(listed(ok(Access::write, "/etc/passwd")));
    EXPECT_TRUE(listed(ok(Access::create, "/opt/node/lib/evil.js")));
    EXPECT_TRUE(listed(ok(Access::remove, "/opt/rules/default.yml")));
}

TEST(JudgeWrite, WritesToTheSandboxDevAndProcAreNotListedAndAreWithoutTheGrant) {
    const std::vector<ObservedAccess> writes = {
        ok(Access::write, "/dev/null"),
        ok(Access::create, "/dev/shm/sem.x"),
        ok(Access::write, "/proc/self/comm", "/proc/7/comm"),
    };
    EXPECT_TRUE(judge(writes).empty());
    Grants g = standard();
    g.writable_system.clear();
    EXPECT_EQ(paths(judge(g, writes)), (Paths{"/dev/null", "/dev/shm/sem.x", "/proc/7/comm"}));
}

TEST(JudgeWrite, RefusedWriteToProcSysIsListed) {
    EXPECT_TRUE(listed(failed(Access::write, "/proc/sys/kernel/core_pattern", "EROFS")));
}

TEST(JudgeWrite, WriteThroughAWorkspaceLinkIsJudgedWhereItLeads) {
    ObservedAccess a = failed(Access::write, "/work/ws/hosts", "EACCES");
    a.path_resolved = "/etc/hosts";
    EXPECT_EQ(paths(judge({a})), Paths{"/etc/hosts"});
    a.success = true;
    a.error.clear();
    EXPECT_EQ(paths(judge({a})), Paths{"/etc/hosts"});
}

TEST(JudgeWrite, ReadOnlyLoginIsReadAndRefusedQuietlyAndListedWithoutTheGrant) {
    const std::vector<ObservedAccess> events = {
        ok(Access::read, "/priv/run-1/home-a/.claude/.credentials.json",
           "/host/u/.claude/.credentials.json"),
        [] {
            auto a = failed(Access::write, "/priv/run-1/home-a/.claude/.credentials.json", "EROFS");
            a.path_resolved = "/host/u/.claude/.credentials.json";
            return a;
        }(),
    };
    EXPECT_TRUE(judge(events).empty());
    Grants g = standard();
    g.read_only_logins.clear();
    const auto f = judge(g, events);
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].path, "/host/u/.claude/.credentials.json");
    EXPECT_EQ(f[0].count, 2U);
    EXPECT_TRUE(f[0].refused);
}

TEST(JudgeWrite, ALoginGrantIsNoWriteGrant) {
    EXPECT_TRUE(listed(ok(Access::write, "/host/u/.claude/.credentials.json")));
}

// ---- Always-listed paths -----------------------------------------------------------------------

TEST(JudgeAlwaysListed, ReadOfTheEvaluationFolderIsListedUnderASystemPath) {
    const auto f = judge({ok(Access::read, "/repo/.tea/evaluator/expected.json")});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].reason, "access to always-listed /repo/.tea");
    EXPECT_FALSE(f[0].refused);
    // Positive control: the rest of the system path /repo is granted.
    EXPECT_FALSE(listed(ok(Access::read, "/repo/src/main.c")));
}

TEST(JudgeAlwaysListed, MissingFileInTheEvaluationFolderIsListedAndOutsideItIsNot) {
    EXPECT_TRUE(listed(failed(Access::read, "/repo/.tea/answers.json", "ENOENT")));
    EXPECT_FALSE(listed(failed(Access::read, "/repo/src/answers.json", "ENOENT")));
}

TEST(JudgeAlwaysListed, RefusedAccessIsListedAsRefused) {
    const auto f = judge({failed(Access::read, "/repo/.tea/answers.json", "EACCES")});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_TRUE(f[0].refused);
    const auto w = judge({failed(Access::write, "/repo/.git/config", "EROFS")});
    ASSERT_EQ(w.size(), 1U);
    EXPECT_EQ(w[0].reason, "access to always-listed /repo/.git");
    EXPECT_TRUE(w[0].refused);
}

TEST(JudgeAlwaysListed, EveryKindOfAccessIsListed) {
    for (Access kind : {Access::read, Access::write, Access::exec, Access::list, Access::readlink,
                        Access::create, Access::remove, Access::other}) {
        EXPECT_TRUE(listed(ok(kind, "/repo/.tea/x"))) << syscall_of(kind);
        EXPECT_TRUE(listed(failed(kind, "/repo/.tea/x", "ENOENT"))) << syscall_of(kind);
    }
}

TEST(JudgeAlwaysListed, ListedEvenUnderAnOsDir) {
    Grants g = standard();
    g.always_listed.push_back("/etc/tea-secret");
    EXPECT_TRUE(listed(g, ok(Access::read, "/etc/tea-secret/key")));
    EXPECT_FALSE(listed(g, ok(Access::read, "/etc/hosts")));
}

TEST(JudgeAlwaysListed, SuccessfulMetadataProbeIsListedAndAFailedOneIsNot) {
    EXPECT_TRUE(listed(ok(Access::metadata, "/repo/.tea/expected.json")));
    EXPECT_FALSE(listed(failed(Access::metadata, "/repo/.tea/expected.json", "ENOENT")));
    // Positive control: a metadata probe elsewhere is not listed even when it succeeds.
    EXPECT_FALSE(listed(ok(Access::metadata, "/repo/src/main.c")));
}

TEST(JudgeAlwaysListed, ExceptionsAreNotListed) {
    EXPECT_FALSE(listed(ok(Access::read, "/repo/.git/worktrees/wt/HEAD")));
    EXPECT_FALSE(listed(ok(Access::write, "/priv/run-1/home-a/.cache/x")));
    EXPECT_FALSE(listed(ok(Access::read, "/priv/run-1/tmp-a/x")));
    // Positive controls: beside the exceptions, the same accesses are listed.
    EXPECT_TRUE(listed(ok(Access::read, "/repo/.git/HEAD")));
    EXPECT_TRUE(listed(ok(Access::read, "/repo/.git/worktrees/wt2/HEAD")));
    EXPECT_TRUE(listed(ok(Access::read, "/priv/run-1/home-b/.bashrc")));
    EXPECT_TRUE(listed(ok(Access::read, "/priv/run-2/tmp-a/x")));
}

TEST(JudgeAlwaysListed, AnExceptionOnlyLiftsTheListingAndGrantsNothing) {
    Grants g = standard();
    g.workspace_like = {"/work/ws"};
    const auto f = judge(g, {ok(Access::read, "/priv/run-1/home-a/.bashrc")});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].reason, "read outside the grants");
}

TEST(JudgeAlwaysListed, AlwaysListedInsideAnExceptionIsListed) {
    // The deepest rule wins.
    Grants g = standard();
    g.always_listed.push_back("/priv/run-1/home-a/.claude/projects");
    EXPECT_TRUE(listed(g, ok(Access::read, "/priv/run-1/home-a/.claude/projects/x")));
    EXPECT_FALSE(listed(g, ok(Access::read, "/priv/run-1/home-a/.claude/settings.json")));
}

TEST(JudgeAlwaysListed, APathBothListedAndExceptedStaysListed) {
    Grants g = standard();
    g.always_listed_exceptions.push_back("/repo/.tea");
    EXPECT_TRUE(listed(g, ok(Access::read, "/repo/.tea/x")));
}

TEST(JudgeAlwaysListed, TraversalProbesOnTheWayToTheHomeAreNotListed) {
    // realpath() readlinks each ancestor, module resolution stats them.
    const std::vector<ObservedAccess> walk = {
        failed(Access::readlink, "/priv", "EINVAL"),
        failed(Access::readlink, "/priv/run-1", "EINVAL"),
        ok(Access::metadata, "/priv/run-1"),
        ok(Access::other, "/priv/run-1"),
    };
    EXPECT_TRUE(judge(walk).empty());
    // Positive controls: the same probes of a directory that leads to no exception are listed,
    // and so is listing or opening an ancestor.
    EXPECT_TRUE(listed(failed(Access::readlink, "/priv/run-2", "EINVAL")));
    EXPECT_TRUE(listed(ok(Access::metadata, "/priv/run-2")));
    EXPECT_TRUE(listed(ok(Access::list, "/priv")));
    EXPECT_TRUE(listed(ok(Access::read, "/priv/run-1")));
}

TEST(JudgeAlwaysListed, MkdirPOnTheWayToTheHomeIsNotListed) {
    // coreutils' mkdir -p makes every ancestor of "$HOME/.claude/projects" from the root down.
    const std::vector<ObservedAccess> walk = {
        failed(Access::create, "/priv", "EEXIST"),
        failed(Access::create, "/priv/run-1", "EEXIST"),
        failed(Access::create, "/priv/run-1/home-a", "EEXIST"),
        ok(Access::create, "/priv/run-1/home-a/.claude"),
    };
    EXPECT_TRUE(judge(walk).empty());
    // Positive controls: the same mkdir of a directory that leads to no exception is listed, and
    // so is one beside the home that the cover refused, or one that was not refused as existing.
    EXPECT_TRUE(listed(failed(Access::create, "/priv/run-2", "EEXIST")));
    EXPECT_TRUE(listed(failed(Access::create, "/priv/run-1/new", "EROFS")));
    EXPECT_TRUE(listed(failed(Access::create, "/priv/run-1", "EROFS")));
    EXPECT_TRUE(listed(failed(Access::create, "/repo/.tea", "EEXIST")));
}

TEST(JudgeAlwaysListed, AClientsWalkUpForItsFilesAboveTheHomeIsNotListed) {
    // Claude Code opens CLAUDE.md, CLAUDE.local.md and AGENTS.md in each directory above its
    // working directory; under the private root's cover none of them exists.
    const std::vector<ObservedAccess> walk = {
        failed(Access::read, "/priv/CLAUDE.md", "ENOENT"),
        failed(Access::read, "/priv/run-1/AGENTS.md", "ENOENT"),
        failed(Access::read, "/priv/run-1/CLAUDE.local.md", "ENOENT"),
        failed(Access::read, "/priv/run-1/.claude/CLAUDE.md", "ENOENT"),
        failed(Access::read, "/priv/.claude/agents/x/AGENTS.md", "ENOENT"),
    };
    EXPECT_TRUE(judge(walk).empty());
    // Positive controls: deeper than the way down (another run's home, the git directory's refs),
    // a name that was found, an open the cover refused, and the same walk-up inside the
    // evaluation folder, which no workspace lies beneath, are all listed.
    EXPECT_TRUE(listed(failed(Access::read, "/priv/run-2/CLAUDE.md", "ENOENT")));
    EXPECT_TRUE(listed(failed(Access::read, "/priv/run-2/home-b/.claude.json", "ENOENT")));
    EXPECT_TRUE(listed(failed(Access::read, "/priv/run-2/.claude/CLAUDE.md", "ENOENT")));
    EXPECT_TRUE(listed(ok(Access::read, "/priv/run-1/CLAUDE.md")));
    EXPECT_TRUE(listed(failed(Access::write, "/priv/run-1/CLAUDE.md", "EROFS")));
    EXPECT_TRUE(listed(failed(Access::read, "/priv/run-1/CLAUDE.md", "EACCES")));
    EXPECT_TRUE(listed(failed(Access::read, "/repo/.tea/CLAUDE.md", "ENOENT")));
    EXPECT_TRUE(listed(failed(Access::read, "/repo/.git/refs/CLAUDE.md", "ENOENT")));
}

TEST(JudgeAlwaysListed, ModuleWalkUpBesideTheHome) {
    // A failed stat learns nothing; a failed open is an attempt on the folder.
    EXPECT_FALSE(listed(failed(Access::metadata, "/priv/run-1/node_modules", "ENOENT")));
    EXPECT_TRUE(listed(failed(Access::read, "/priv/run-1/node_modules/x.js", "ENOENT")));
}

TEST(JudgeAlwaysListed, OsPathLinkedIntoTheEvaluationFolderIsListedByItsRealPath) {
    const auto f = judge({ok(Access::read, "/etc/answers", "/repo/.tea/answers.json")});
    EXPECT_EQ(paths(f), Paths{"/repo/.tea/answers.json"});
    EXPECT_FALSE(listed(ok(Access::read, "/etc/hosts")));
}

TEST(JudgeAlwaysListed, WorkspaceLinkIntoTheEvaluationFolderIsListedByItsRealPath) {
    EXPECT_EQ(paths(judge({ok(Access::read, "/work/ws/a", "/repo/.tea/answers.json")})),
              Paths{"/repo/.tea/answers.json"});
}

TEST(JudgeAlwaysListed, LinkInsideTheEvaluationFolderIsListedByTheAskedPath) {
    const auto f = judge({ok(Access::read, "/repo/.tea/lib", "/usr/lib/libc.so.6")});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].path, "/repo/.tea/lib");
    EXPECT_FALSE(listed(ok(Access::read, "/usr/lib/libc.so.6")));
}

TEST(JudgeAlwaysListed, NonFileReachedThroughTheFolderIsListedByTheAskedPath) {
    EXPECT_EQ(paths(judge({ok(Access::read, "/repo/.tea/fifo", "pipe:[77]")})),
              Paths{"/repo/.tea/fifo"});
}

TEST(JudgeAlwaysListed, RootAsAlwaysListedListsEverything) {
    Grants g = standard();
    g.always_listed = {"/"};
    g.always_listed_exceptions.clear();
    EXPECT_TRUE(listed(g, ok(Access::read, "/usr/lib/libc.so.6")));
}

// ---- Links -------------------------------------------------------------------------------------

TEST(JudgeLink, WorkspaceLinkOutsideIsReportedWhereItLeads) {
    const auto f = judge({ok(Access::read, "/work/ws/key", "/root/.ssh/id_rsa")});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].path, "/root/.ssh/id_rsa");
    // Positive control: a plain workspace file is not listed.
    EXPECT_FALSE(listed(ok(Access::read, "/work/ws/key")));
}

TEST(JudgeLink, OsFileLinkedElsewhereIsJudgedByTheAskedPath) {
    const auto stub = "/run/systemd/resolve/stub-resolv.conf";
    EXPECT_FALSE(listed(ok(Access::read, "/etc/resolv.conf", stub)));
    // Positive control: the same file asked for outside the OS dirs is listed.
    EXPECT_EQ(paths(judge({ok(Access::read, "/home/u/resolv.conf", stub)})), Paths{stub});
}

TEST(JudgeLink, PathLinkedIntoTheOsDirsIsGranted) {
    EXPECT_FALSE(listed(ok(Access::exec, "/work/ws/node_modules/.bin/sh", "/usr/bin/dash")));
    EXPECT_FALSE(listed(ok(Access::read, "/home/u/libc.so", "/usr/lib/x86_64-linux-gnu/libc.so")));
}

TEST(JudgeLink, LinkPlantedInAWritableOsPlaceBorrowsNoTrust) {
    // /dev/shm and the temp dir's mount lie under /dev, an OS dir, but the target writes them.
    EXPECT_EQ(paths(judge({ok(Access::read, "/dev/shm/k", "/root/.ssh/id_rsa")})),
              Paths{"/root/.ssh/id_rsa"});
    EXPECT_EQ(paths(judge({ok(Access::read, "/dev/tea-evaluate-tmp/k", "/home/u/.netrc")})),
              Paths{"/home/u/.netrc"});
    // Positive controls: the sandbox's device files and their links are granted.
    EXPECT_FALSE(listed(ok(Access::read, "/dev/urandom")));
    EXPECT_FALSE(listed(ok(Access::write, "/dev/stderr", "/dev/pts/0")));
}

TEST(JudgeLink, UnknownRealPathFallsBackToTheAskedPath) {
    ObservedAccess a = ok(Access::read, "/home/u/x");
    a.path_resolved.clear();
    EXPECT_EQ(paths(judge({a})), Paths{"/home/u/x"});
    a.path_asked = "/work/ws/x";
    EXPECT_FALSE(listed(a));
}

// ---- Objects outside the file system -----------------------------------------------------------

TEST(JudgeNonFile, PipesAndSocketsReachedThroughFdLinksAreNotListed) {
    Judge j(standard());
    j.observe(ok(Access::write, "/dev/stdout", "pipe:[123]"));
    j.observe(ok(Access::read, "/proc/self/fd/0", "pipe:[5]"));
    j.observe(ok(Access::read, "/proc/self/fd/7", "socket:[9]"));
    j.observe(ok(Access::read, "/proc/self/ns/net", "net:[4026531840]"));
    EXPECT_TRUE(j.findings().empty());
    EXPECT_EQ(j.malformed(), 0U);
    // Positive control: a real file reached through the same fd link is listed.
    EXPECT_TRUE(listed(ok(Access::read, "/proc/self/fd/7", "/root/.ssh/id_rsa")));
}

// ---- Kernel views ------------------------------------------------------------------------------

TEST(JudgeKernelView, ProcAndSysAreGrantedByTheRealPathAndListedWithoutTheGrant) {
    const std::vector<ObservedAccess> reads = {
        ok(Access::read, "/proc/self/status", "/proc/77/status"),
        ok(Access::read, "/sys/devices/system/cpu/online"),
        ok(Access::read, "/proc/self/fdinfo/3", "/proc/77/fdinfo/3"),
        ok(Access::list, "/proc/self/fd", "/proc/77/fd"),
    };
    EXPECT_TRUE(judge(reads).empty());
    Grants g = standard();
    g.kernel_views.clear();
    EXPECT_EQ(judge(g, reads).size(), 4U);
}

TEST(JudgeKernelView, ProcRootLinkIsJudgedWhereItLeads) {
    EXPECT_EQ(
        paths(judge({ok(Access::read, "/proc/self/root/root/.ssh/id_rsa", "/root/.ssh/id_rsa")})),
        Paths{"/root/.ssh/id_rsa"});
}

TEST(JudgeKernelView, PathThroughAProcLinkWithoutARealPathIsListed) {
    // The observer could not say where the link led: the procfs grant must not cover it.
    for (const char *path :
         {"/proc/self/root/root/.ssh/id_rsa", "/proc/1/cwd/secret", "/proc/thread-self/fd/3",
          "/proc/12/task/13/root/etc/shadow", "/proc/self/map_files/400000-401000"}) {
        ObservedAccess a = ok(Access::read, path);
        EXPECT_TRUE(listed(a)) << path;
        a.access = Access::exec;
        EXPECT_TRUE(listed(a)) << path;
    }
    // Positive control: procfs's own files are granted.
    EXPECT_FALSE(listed(ok(Access::read, "/proc/12/task/13/stat")));
}

TEST(JudgeKernelView, ReadingAProcLinkItselfIsGranted) {
    EXPECT_FALSE(listed(ok(Access::readlink, "/proc/self/fd/3")));
    EXPECT_FALSE(listed(ok(Access::readlink, "/proc/self/cwd")));
    EXPECT_FALSE(listed(ok(Access::readlink, "/proc/self/exe")));
    // Positive control: following the same link is not.
    EXPECT_TRUE(listed(ok(Access::read, "/proc/self/cwd")));
}

TEST(JudgeKernelView, ReexecOfTheOwnImageIsGranted) {
    EXPECT_FALSE(listed(ok(Access::exec, "/proc/self/exe")));
}

TEST(JudgeKernelView, AskedProcPathGrantsNothing) {
    // Only the real path can grant a kernel view.
    EXPECT_TRUE(listed(ok(Access::read, "/proc/self/status", "/home/u/x")));
}

// ---- Path components and normalisation ---------------------------------------------------------

TEST(JudgePaths, GrantsMatchWholeComponentsOnly) {
    for (const char *path : {"/usr2/lib/x", "/work/ws-evil/x", "/work/w", "/opt/rules-old/x",
                             "/etcetera", "/devices/x", "/priv/run-1/home-a-evil/x"}) {
        EXPECT_TRUE(listed(ok(Access::read, path))) << path;
    }
    for (const char *path : {"/usr/lib/x", "/work/ws/x", "/work/ws", "/opt/rules"}) {
        EXPECT_FALSE(listed(ok(Access::read, path))) << path;
    }
}

TEST(JudgePaths, DotDotIsFoldedBeforeJudging) {
    EXPECT_EQ(paths(judge({ok(Access::read, "/work/ws/../secret/k")})), Paths{"/work/secret/k"});
    EXPECT_EQ(paths(judge({ok(Access::read, "/usr/lib/../../root/x")})), Paths{"/root/x"});
    EXPECT_EQ(paths(judge({ok(Access::read, "/repo/src/../.tea/x")})), Paths{"/repo/.tea/x"});
    EXPECT_FALSE(listed(ok(Access::read, "/work//ws/./a/../b")));
    EXPECT_FALSE(listed(ok(Access::read, "/../../etc/passwd")));
}

TEST(JudgePaths, ReportedPathsAreNormalised) {
    EXPECT_EQ(paths(judge({ok(Access::read, "/work/ws/k", "/root//.ssh/./id_rsa")})),
              Paths{"/root/.ssh/id_rsa"});
    EXPECT_EQ(paths(judge({ok(Access::list, "/root/")})), Paths{"/root"});
}

TEST(JudgePaths, GrantsAreNormalised) {
    Grants g = standard();
    g.workspace_like = {"/work/ws/", "/work/./x/../ws3"};
    EXPECT_FALSE(listed(g, ok(Access::write, "/work/ws3/out")));
    EXPECT_FALSE(listed(g, ok(Access::write, "/work/ws/out")));
    EXPECT_TRUE(listed(g, ok(Access::write, "/work/x/out")));
}

TEST(JudgePaths, DeletedSuffixKeepsTheDirectoryJudgment) {
    EXPECT_FALSE(listed(ok(Access::read, "/work/ws/tmp", "/work/ws/tmp (deleted)")));
    EXPECT_TRUE(listed(ok(Access::read, "/home/u/tmp", "/home/u/tmp (deleted)")));
}

// ---- Malformed input ---------------------------------------------------------------------------

TEST(JudgeMalformed, MalformedPathsAreCountedNotJudged) {
    Judge j(standard());
    ObservedAccess empty = ok(Access::read, "", "/root/x");
    ObservedAccess relative = ok(Access::read, "root/x");
    ObservedAccess nul_asked = ok(Access::read, std::string("/work/ws/a\0/../../../root/x", 27));
    ObservedAccess nul_resolved = ok(Access::read, "/work/ws/a");
    nul_resolved.path_resolved = std::string("/root/x\0y", 9);
    for (const auto &a : {empty, relative, nul_asked, nul_resolved}) j.observe(a);
    EXPECT_EQ(j.malformed(), 4U);
    EXPECT_TRUE(j.findings().empty());
    // Positive control: a well-formed access to the same file is listed, not counted.
    j.observe(ok(Access::read, "/root/x"));
    EXPECT_EQ(j.malformed(), 4U);
    EXPECT_EQ(paths(j.findings()), Paths{"/root/x"});
}

TEST(JudgeMalformed, BadGrantsAreRefused) {
    const auto refused = [](auto edit) {
        Grants g = standard();
        edit(g);
        EXPECT_THROW(Judge{g}, std::invalid_argument);
    };
    refused([](Grants &g) { g.workspace_like.push_back("relative/ws"); });
    refused([](Grants &g) { g.runtime.push_back(""); });
    refused([](Grants &g) { g.system_paths.push_back("/"); });
    refused([](Grants &g) { g.os_dirs.push_back("/usr/../.."); });
    refused([](Grants &g) { g.always_listed_exceptions.push_back("/"); });
    refused([](Grants &g) { g.always_listed.push_back(std::string("/a\0b", 4)); });
    try {
        Grants g = standard();
        g.system_paths.push_back("opt/x");
        Judge j(g);
        ADD_FAILURE() << "no refusal";
    } catch (const std::invalid_argument &e) {
        EXPECT_EQ(std::string(e.what()), "system_paths: 'opt/x' is not an absolute path");
    }
    EXPECT_NO_THROW(Judge{standard()});
}

// ---- Deduplication and order -------------------------------------------------------------------

TEST(JudgeFindings, EachPathIsListedOnceWithItsSyscallsAndCount) {
    auto a = ok(Access::read, "/home/u/tool");
    auto b = ok(Access::exec, "/home/u/tool");
    auto c = ok(Access::read, "/home/u/tool");
    c.syscall = "openat";
    auto d = ok(Access::read, "/home/u/other/../tool");
    d.syscall = "open";
    const auto f = judge({a, b, c, d});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].syscalls, (Paths{"openat", "execve", "open"}));
    EXPECT_EQ(f[0].count, 4U);
    EXPECT_EQ(f[0].reason, "read outside the grants");
}

TEST(JudgeFindings, UnlistedAccessesDoNotCount) {
    const auto f = judge({ok(Access::read, "/home/u/x"), ok(Access::metadata, "/home/u/x"),
                          failed(Access::read, "/home/u/x", "ENOENT")});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].count, 1U);
    EXPECT_EQ(f[0].syscalls, Paths{"openat"});
}

TEST(JudgeFindings, SortedByPath) {
    const auto f = judge({ok(Access::read, "/srv/z"), ok(Access::read, "/home/a"),
                          ok(Access::read, "/mnt/m"), ok(Access::read, "/home/a")});
    EXPECT_EQ(paths(f), (Paths{"/home/a", "/mnt/m", "/srv/z"}));
}

TEST(JudgeFindings, TheMostSeriousReasonWinsAndRefusedSticks) {
    const auto f =
        judge({ok(Access::read, "/home/u/x"), failed(Access::write, "/home/u/x", "EROFS"),
               ok(Access::read, "/home/u/x")});
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].reason, "write refused by the confinement");
    EXPECT_TRUE(f[0].refused);
    EXPECT_EQ(f[0].count, 3U);
    const auto g =
        judge({failed(Access::write, "/home/u/x", "EROFS"), ok(Access::write, "/home/u/x"),
               failed(Access::write, "/home/u/x", "EPERM")});
    ASSERT_EQ(g.size(), 1U);
    EXPECT_EQ(g[0].reason, "write outside the writable grants");
    EXPECT_TRUE(g[0].refused);
}

TEST(JudgeFindings, FindingsAreBounded) {
    Judge j(standard(), 2);
    j.observe(ok(Access::read, "/home/a"));
    j.observe(ok(Access::read, "/home/b"));
    j.observe(ok(Access::read, "/home/c"));
    j.observe(ok(Access::read, "/home/a"));
    const auto f = j.findings();
    EXPECT_EQ(paths(f), (Paths{"/home/a", "/home/b"}));
    EXPECT_EQ(f[0].count, 2U);
    EXPECT_EQ(j.omitted(), 1U);
}

// ---- Defaults ----------------------------------------------------------------------------------

TEST(JudgeDefaults, OsDirs) {
    const Grants g = default_os_grants();
    for (const char *dir : {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/dev"}) {
        EXPECT_NE(std::find(g.os_dirs.begin(), g.os_dirs.end(), dir), g.os_dirs.end()) << dir;
    }
    for (const char *dir : {"/proc", "/sys", "/tmp", "/home", "/root", "/var", "/opt", "/run"}) {
        EXPECT_EQ(std::find(g.os_dirs.begin(), g.os_dirs.end(), dir), g.os_dirs.end()) << dir;
    }
    EXPECT_EQ(g.kernel_views, (Paths{"/proc", "/sys"}));
    EXPECT_TRUE(g.workspace_like.empty());
    EXPECT_TRUE(g.always_listed.empty());
    for (const char *path : {"/tmp/x", "/var/lib/x", "/root/x", "/home/u/x", "/run/x"}) {
        EXPECT_TRUE(listed(g, ok(Access::read, path))) << path;
    }
}

// ---- Performance -------------------------------------------------------------------------------

TEST(JudgePerformance, GrantedAccessesAllocateNothing) {
    std::vector<ObservedAccess> events = {
        ok(Access::read, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
        ok(Access::read, "/etc/resolv.conf", "/run/systemd/resolve/stub-resolv.conf"),
        ok(Access::write, "/work/ws/build/obj/deep/er/still/a.o"),
        ok(Access::exec, "/opt/node/bin/node"),
        ok(Access::read, "/proc/self/status", "/proc/77/status"),
        ok(Access::metadata, "/home/u/.npmrc"),
        failed(Access::read, "/home/u/.npmrc", "ENOENT"),
        ok(Access::read, "/priv/run-1/home-a/.config/x/../y/z"),
        failed(Access::readlink, "/priv/run-1", "EINVAL"),
    };
    // Positive control: the counter sees an allocation.
    g_allocations = 0;
    g_counting = true;
    auto probe = std::make_unique<std::string>(100, 'x');
    g_counting = false;
    ASSERT_GT(g_allocations.load(), 0U);
    probe.reset();

    Judge j(standard());
    for (const auto &e : events) j.observe(e);  // scratch buffers reach their size
    g_allocations = 0;
    g_counting = true;
    for (int round = 0; round < 10000; ++round) {
        for (const auto &e : events) j.observe(e);
    }
    g_counting = false;
    EXPECT_EQ(g_allocations.load(), 0U);
    EXPECT_TRUE(j.findings().empty());
}

// ---- A differential check of component matching against std::filesystem ----------------------

TEST(JudgeProperty, MatchesALexicalReferenceOnRandomPaths) {
    namespace fs = std::filesystem;
    Grants g;
    g.workspace_like = {"/w/ws"};
    g.system_paths = {"/s", "/a/b/c"};
    const std::vector<std::string> grants = {"/w/ws", "/s", "/a/b/c"};
    const std::vector<std::string> parts = {"w", "ws", "ws-x", "s", "s2", "a",
                                            "b", "c",  "..",   ".", "",   "x"};
    const auto reference_granted = [&](const std::string &path) {
        const fs::path p = fs::path(path).lexically_normal();
        for (const auto &grant : grants) {
            const fs::path gp(grant);
            auto [gi, pi] = std::mismatch(gp.begin(), gp.end(), p.begin(), p.end());
            // A trailing empty component ("/w/ws/" normalises to "/w/ws/") matches too.
            if (gi == gp.end()) return true;
        }
        return false;
    };
    std::mt19937 rng(12345);
    for (int i = 0; i < 20000; ++i) {
        std::string path;
        const auto n = rng() % 6;
        for (unsigned k = 0; k <= n; ++k) path += "/" + parts[rng() % parts.size()];
        EXPECT_EQ(listed(g, ok(Access::read, path)), !reference_granted(path)) << path;
    }
}

// ---- What the observer could not place ---------------------------------------------------------

// execve("/dev/fd/3") of an O_PATH descriptor runs whatever 3 names, while the path lies under
// /dev: with no real path established, the access is listed as unverified.
TEST(JudgeUnverified, AnExecThroughADescriptorLinkIsListed) {
    for (const char *link : {"/dev/fd/3", "/dev/stdin", "/proc/self/fd/3", "/proc/77/fd/3",
                             "/proc/thread-self/fd/3", "/dev/fd/3/bin/tool"}) {
        const auto found = judge({ok(Access::exec, link)});
        ASSERT_EQ(found.size(), 1U) << link;
        EXPECT_NE(found[0].reason.find("could not be verified"), std::string::npos) << link;
    }
    // Control: an exec of a real file under /dev is judged as such (and granted), and reading
    // a descriptor link's own text reads no file.
    EXPECT_FALSE(listed(ok(Access::exec, "/dev/null")));
    EXPECT_FALSE(listed(ok(Access::readlink, "/dev/fd/3")));
    EXPECT_FALSE(listed(ok(Access::readlink, "/dev/stdin")));
    // A real path the observer established decides: the descriptor's file.
    EXPECT_FALSE(listed(ok(Access::read, "/dev/fd/3", "/work/ws/notes")));
    EXPECT_TRUE(listed(ok(Access::read, "/dev/fd/3", "/srv/key")));
}

TEST(JudgeUnverified, AnAccessTheObserverCouldNotPlaceIsListedWhereverItsPathLies) {
    ObservedAccess a = ok(Access::exec, "/work/ws/x");
    a.unverified = "the call removed /work/ws/x";
    const auto found = judge({a});
    ASSERT_EQ(found.size(), 1U);
    EXPECT_EQ(found[0].path, "/work/ws/x");
    EXPECT_NE(found[0].reason.find("the call removed /work/ws/x"), std::string::npos);
    // A failed access reached nothing, placed or not.
    ObservedAccess failed_exec = failed(Access::exec, "/work/ws/x", "ENOENT");
    failed_exec.unverified = a.unverified;
    EXPECT_FALSE(listed(failed_exec));
    // Control: the same exec, placed, is granted.
    EXPECT_FALSE(listed(ok(Access::exec, "/work/ws/x")));
}

TEST(JudgeNamed, WhatTheAskedPathNamesIsJudgedToo) {
    // An exec of a workspace link to a tool outside the grants.
    ObservedAccess run = ok(Access::exec, "/work/ws/x");
    run.path_named = "/srv/tool";
    EXPECT_EQ(paths(judge({run})), Paths{"/srv/tool"});
    // An open whose descriptor names a granted decoy while the asked path leads to the key.
    ObservedAccess swapped = ok(Access::read, "/srv/key", "/work/ws/notes");
    swapped.path_named = "/srv/key";
    EXPECT_EQ(paths(judge({swapped})), Paths{"/srv/key"});
    // A refused write through a workspace link to /etc.
    ObservedAccess write = failed(Access::write, "/work/ws/link", "EROFS");
    write.path_named = "/etc/hostname";
    EXPECT_EQ(paths(judge({write})), Paths{"/etc/hostname"});
    // Controls: what the asked path names is granted; a system link the distribution made.
    run.path_named = "/usr/bin/true";
    EXPECT_FALSE(listed(run));
    ObservedAccess lib =
        ok(Access::read, "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6");
    lib.path_named = "/lib/x86_64-linux-gnu/libc.so.6";
    EXPECT_FALSE(listed(lib));
}

}  // namespace
