// The target's view of the file system: the withheld folder, the read-only
// host, other runs' homes, the private root, the temp directory, /proc/sys and
// /sys, and a descriptor the runtime was handed.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "support/process.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

// <prefix> and the 12 letters and digits of fs::random_token, as the runtime names its directories.
bool named_by_the_runtime(const std::string &name, const std::string &prefix) {
    const auto token = name.substr(std::min(name.size(), prefix.size()));
    return name.rfind(prefix, 0) == 0 && token.size() == 12 &&
           std::all_of(token.begin(), token.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
}

// What the private root keeps from one call to the next on purpose: the host-socket walk's cache
// (a regular file of the user's, never a call's directory).
bool kept_between_calls(const fs::path &entry) {
    const auto name = entry.filename().string();
    return (name == "socket-walk-cache" || name == "socket-walk-cache.new") &&
           fs::is_regular_file(fs::symlink_status(entry));
}

TEST_P(EitherIdentity, WithheldFolderReadsAsEmptyAndRefusesWrites) {
    const auto probe = python(R"PY(
report("READ", lambda: open(sys.argv[1]).read().strip())
report("LIST", lambda: ",".join(sorted(os.listdir(sys.argv[2]))))
report("WRITE", lambda: open(sys.argv[2] + "/planted", "w").write("x"))
)PY",
                              {secret_file().string(), withheld().string()});
    const auto [confined, control] =
        run_both({.command = probe, .withhold = {withheld().string()}});

    EXPECT_EQ(confined.status, 0) << confined;
    EXPECT_TRUE(confined.has("READ-DENIED:ENOENT")) << confined;
    EXPECT_TRUE(confined.has("LIST-OK:")) << "an empty folder" << confined;
    EXPECT_TRUE(confined.has("WRITE-DENIED:EROFS")) << confined;
    EXPECT_EQ(control.value("READ-OK"), secret()) << control;
    EXPECT_TRUE(control.has("WRITE-OK")) << control;
}

TEST_P(EitherIdentity, AWithheldFolderCannotBeMovedFromUnderItsCover) {
    // The withheld folder lies two levels down; its parent is the workspace's own. A target
    // that moved the parent (rename, or an exchange with a folder of its own) would leave the
    // next call covering a name with nothing behind it and the folder readable under the new one.
    const auto sub = workspace() / "sub";
    const auto answers = sub / "ans";
    fs::create_directories(answers);
    fs::create_directory(workspace() / "decoy");
    const std::string key = "answer-" + random_token();
    make_file(answers / "key.txt", key + "\n", 0644);
    hand_to_caller(workspace());
    struct stat before {};
    ASSERT_EQ(::stat((answers / "key.txt").c_str(), &before), 0);
    const auto probe = python(R"PY(
report("MOVE", lambda: os.rename("sub", ".s"))
report("EXCHANGE", lambda: zero(libc.renameat2(-100, b"decoy", -100, b"sub", 2)))
report("MOVE-COVER", lambda: os.rename("sub/ans", "sub/x"))
report("READ", lambda: open("sub/ans/key.txt").read().strip())
)PY");
    const auto read_after = python(R"PY(
for name in (".s/ans/key.txt", "decoy/ans/key.txt", "sub/ans/key.txt"):
    report("READ " + name, lambda: open(name).read().strip())
)PY");
    const auto withhold = std::vector<std::string>{answers.string()};
    const auto confined = run({.command = probe, .withhold = withhold});
    EXPECT_EQ(confined.status, 0) << confined;
    EXPECT_TRUE(confined.has("MOVE-DENIED:EBUSY")) << confined;
    EXPECT_TRUE(confined.has("EXCHANGE-DENIED:EBUSY")) << confined;
    EXPECT_TRUE(confined.has("MOVE-COVER-DENIED:EBUSY")) << confined;
    EXPECT_TRUE(confined.has("READ-DENIED:ENOENT")) << confined;
    const auto next = run({.command = read_after, .withhold = withhold});
    EXPECT_EQ(next.status, 0) << next;
    EXPECT_EQ(next.out.find(key), std::string::npos) << next;
    EXPECT_EQ(next.err.find(key), std::string::npos) << next;
    // Never lent: the folder's files keep their owner through both calls.
    struct stat after {};
    ASSERT_EQ(::stat((answers / "key.txt").c_str(), &after), 0) << "the folder stayed in place";
    EXPECT_EQ(after.st_uid, before.st_uid);
    EXPECT_EQ(after.st_gid, before.st_gid);

    // The control: without the confinement the same moves succeed and the key is read under
    // the new name.
    const auto control = run({.backend = Backend::opt_out, .command = probe});
    EXPECT_TRUE(control.has("MOVE-OK")) << control;
    const auto control_next = run({.backend = Backend::opt_out, .command = read_after});
    EXPECT_EQ(control_next.value("READ .s/ans/key.txt-OK"), key) << control_next;
}

TEST_P(EitherIdentity, AWithheldPathNamedThroughALinkInTheWorkspaceIsRefused) {
    // `hidden` leads to .data/hidden. Withheld by the link's name, the folder would be covered
    // only while the link leads there: a target re-points it (rm hidden; ln -s d hidden) and the
    // next call covers d, leaving .data/hidden readable.
    const auto real = workspace() / ".data" / "hidden";
    fs::create_directories(real);
    const std::string key = "hidden-" + random_token();
    make_file(real / "key.txt", key + "\n", 0644);
    fs::create_directory_symlink(".data/hidden", workspace() / "hidden");
    fs::create_directory(workspace() / "d");
    hand_to_caller(workspace());
    const auto read_key = python(R"PY(
report("KEY", lambda: open(".data/hidden/key.txt").read().strip())
)PY");
    const auto by_link =
        run({.command = read_key, .withhold = {(workspace() / "hidden").string()}});
    EXPECT_EQ(by_link.status, 2) << by_link;
    EXPECT_NE(by_link.err.find("is a link inside the workspace"), std::string::npos) << by_link;
    EXPECT_FALSE(by_link.value("KEY-OK")) << by_link;
    // The control: the folder withheld by its own path is covered.
    const auto by_folder = run({.command = read_key, .withhold = {real.string()}});
    EXPECT_EQ(by_folder.status, 0) << by_folder;
    EXPECT_TRUE(by_folder.has("KEY-DENIED:ENOENT")) << by_folder;
}

TEST_P(EitherIdentity, AWithheldPathThatIsGoneIsRefusedNotSkipped) {
    // An earlier call (or anyone) moved the folder: covering nothing would hand the target its
    // content under the new name, so the call is refused with the path named.
    const auto gone = workspace() / "sub" / "ans";
    const auto r = run({.command = {"/bin/echo", "TARGET-RAN"}, .withhold = {gone.string()}});
    EXPECT_EQ(r.status, 12) << r;
    EXPECT_NE(r.err.find(gone.string()), std::string::npos) << r;
    EXPECT_FALSE(r.has("TARGET-RAN")) << r;
    // The control: the same call with the folder in place runs.
    fs::create_directories(gone);
    hand_to_caller(workspace());
    const auto ok = run({.command = {"/bin/echo", "TARGET-RAN"}, .withhold = {gone.string()}});
    EXPECT_EQ(ok.status, 0) << ok;
    EXPECT_TRUE(ok.has("TARGET-RAN")) << ok;
}

TEST_F(Confinement, WritesOutsideTheWorkspaceFailAndInsideSucceed) {
    // Writable by everyone, so only the read-only view can refuse the write.
    const auto elsewhere = host_dir() / "elsewhere";
    fs::create_directory(elsewhere);
    fs::permissions(elsewhere, fs::perms::all);
    const auto etc_file = "/etc/tea-bwt-" + random_token();
    const auto probe =
        python(R"PY(
def write(path):
    with open(path, "w") as f:
        f.write("written")
report("OUTSIDE", lambda: write(sys.argv[1]))
report("INSIDE", lambda: write(sys.argv[2]))
if sys.argv[3]:
    report("ETC", lambda: write(sys.argv[3]))
)PY",
               {(elsewhere / "file").string(), (workspace() / "inside").string(), etc_file});
    const auto confined = run({.command = probe});
    EXPECT_TRUE(confined.has("OUTSIDE-DENIED:EROFS")) << confined;
    EXPECT_TRUE(confined.has("ETC-DENIED:EROFS") || confined.has("ETC-DENIED:EACCES")) << confined;
    EXPECT_TRUE(confined.has("INSIDE-OK")) << confined;
    EXPECT_FALSE(fs::exists(elsewhere / "file"));
    EXPECT_FALSE(fs::exists(etc_file));
    EXPECT_EQ(read_file(workspace() / "inside"), "written");
    // The loan is over: what the target made belongs to the workspace's owner again.
    struct stat st {};
    ASSERT_EQ(::stat((workspace() / "inside").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, ::geteuid());

    // The same probe unconfined (never writing /etc) reaches the directory.
    fs::remove(workspace() / "inside");
    const auto control = run({.backend = Backend::opt_out,
                              .command = python(R"PY(
def write(path):
    with open(path, "w") as f:
        f.write("written")
report("OUTSIDE", lambda: write(sys.argv[1]))
)PY",
                                                {(elsewhere / "file").string()})});
    EXPECT_TRUE(control.has("OUTSIDE-OK")) << control;
    EXPECT_EQ(read_file(elsewhere / "file"), "written");
}

TEST_F(Confinement, AnotherRunsHomeIsHidden) {
    const OtherRun other{private_root(), "other-home-" + random_token()};
    const auto probe = python(R"PY(
report("READ", lambda: open(sys.argv[1]).read())
)PY",
                              {other.secret_file().string()});
    const auto [confined, control] = run_both({.command = probe});
    EXPECT_TRUE(confined.has("READ-DENIED:ENOENT")) << confined;
    EXPECT_EQ(control.value("READ-OK"), read_file(other.secret_file())) << control;
}

TEST_F(Confinement, PrivateRootListsOnlyThisRun) {
    const OtherRun other{private_root(), "x"};
    const auto probe = python(R"PY(
root = sys.argv[1]
print("ROOT:" + ",".join(sorted(os.listdir(root))))
home = os.environ.get("HOME", "")
if os.path.dirname(os.path.dirname(home)) == root:
    print("RUN:" + os.path.basename(os.path.dirname(home)))
    print("RUN-HOLDS:" + ",".join(sorted(os.listdir(os.path.dirname(home)))))
    print("HOME:" + os.path.basename(home))
)PY",
                              {private_root().string()});
    const auto [confined, control] = run_both({.command = probe});
    ASSERT_EQ(confined.status, 0) << confined;
    const auto run_name = confined.value("RUN");
    ASSERT_TRUE(run_name) << confined;
    EXPECT_TRUE(named_by_the_runtime(*run_name, "run-")) << *run_name;
    // Only the path down to this call's home: no other run, no lock, no temp directory.
    EXPECT_EQ(confined.value("ROOT"), *run_name) << confined;
    EXPECT_EQ(confined.value("RUN-HOLDS"), confined.value("HOME")) << confined;

    const auto listed = control.value("ROOT");
    ASSERT_TRUE(listed) << control;
    EXPECT_NE(listed->find(other.run_dir().filename().string()), std::string::npos) << control;
}

// A trial's workspace in its run directory, beside the home (as a trial set lays one out): bound
// back over the private root's cover, while the run's other directories stay under it.
TEST_P(EitherIdentity, WorkspaceInTheRunDirectoryIsWritableAndItsSiblingsStayHidden) {
    // The private root and its parents as the runtime would make them, for whoever runs the call.
    const auto root = private_root();
    for (const auto &dir : {root.parent_path().parent_path(), root.parent_path(), root}) {
        if (!fs::exists(dir)) {
            const bool is_root = call_uid() == 0;
            ASSERT_EQ(::mkdir(dir.c_str(), dir == root ? (is_root ? 0711 : 0700) : 0755), 0) << dir;
            ASSERT_EQ(::chown(dir.c_str(), call_uid(), call_gid()), 0) << dir;
        }
    }
    const auto run_dir = root / ("run-" + random_token(12));
    // A live run's lock, held for the test: the runtime's reclaim in a call of another test
    // sharing this private root leaves the directory alone.
    struct LiveRun {
        fs::path dir;
        int lock = -1;
        ~LiveRun() {
            ::close(lock);
            std::error_code ec;
            fs::remove_all(dir, ec);
        }
    } live{run_dir};
    ASSERT_EQ(::mkdir(run_dir.c_str(), 0711), 0);
    live.lock = ::open((run_dir / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_TRUE(live.lock >= 0 && ::flock(live.lock, LOCK_EX | LOCK_NB) == 0);
    const auto made = [&](const std::string &prefix, unsigned mode) {
        auto dir = run_dir / (prefix + random_token(12));
        fs::create_directory(dir);
        fs::permissions(dir, static_cast<fs::perms>(mode));
        return dir;
    };
    tea::exec::LaunchSpec spec;
    spec.home = made("tea-evaluate-target-home-", 0700).string();
    spec.temp_dir = made("tmp-", 0700).string();
    spec.workspace = spec.cwd = made("workspace-", 0700).string();
    // Readable by everyone: only the cover can hide it.
    const auto sibling = made("sibling-", 0755);
    make_file(sibling / "secret", secret() + "\n", 0644);
    hand_to_caller(run_dir);

    spec.argv = python(R"PY(
def write(path):
    with open(path, "w") as f:
        f.write("written")
report("WRITE", lambda: write(sys.argv[1] + "/result"))
report("SIBLING", lambda: open(sys.argv[2]).read().strip())
report("RUN-HOLDS", lambda: ",".join(sorted(os.listdir(sys.argv[3]))))
)PY",
                       {spec.workspace, (sibling / "secret").string(), run_dir.string()});
    spec.env = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
    const auto confined = run_spec(spec);

    EXPECT_EQ(confined.status, 0) << confined;
    EXPECT_TRUE(confined.has("WRITE-OK")) << confined;
    EXPECT_EQ(read_file(fs::path{spec.workspace} / "result"), "written");
    EXPECT_TRUE(confined.has("SIBLING-DENIED:ENOENT")) << confined;
    const auto name = [](const std::string &p) { return fs::path{p}.filename().string(); };
    const auto expected = std::min(name(spec.home), name(spec.workspace)) + "," +
                          std::max(name(spec.home), name(spec.workspace));
    EXPECT_EQ(confined.value("RUN-HOLDS-OK"), expected) << "no temp directory, no sibling\n"
                                                        << confined;

    // Control: the sibling is there on the host, and the same call unconfined reads it.
    EXPECT_TRUE(fs::exists(sibling / "secret"));
    const auto control = run_spec(spec, Backend::opt_out);
    EXPECT_EQ(control.value("SIBLING-OK"), secret()) << control;

    // Bound back anywhere else under the root, a workspace would uncover the run directory
    // itself, the root, or another run: refused before anything runs.
    const OtherRun other{root, "x"};
    const std::pair<fs::path, std::string> refusals[] = {
        {run_dir, "lies inside the workspace"},
        {root, "lies inside the workspace"},
        {other.run_dir(), "not inside this call's run directory"},
        {other.secret_file().parent_path(), "not inside this call's run directory"}};
    for (const auto &[elsewhere, reason] : refusals) {
        auto moved = spec;
        moved.workspace = moved.cwd = elsewhere.string();
        const auto refused = run_spec(moved, Backend::bubblewrap, true);
        EXPECT_EQ(refused.status, 12) << refused;
        EXPECT_NE(refused.err.find(reason), std::string::npos) << refused;
    }

    // A read-only grant in the run directory (a trial's private repository) is uncovered for
    // reading only; the same sibling was hidden above without it.
    auto granted = spec;
    granted.read_only = {sibling.string()};
    granted.argv = python(R"PY(
def write(path):
    with open(path, "w") as f:
        f.write("written")
report("READ", lambda: open(sys.argv[1]).read().strip())
report("WRITE", lambda: write(sys.argv[1]))
)PY",
                          {(sibling / "secret").string()});
    const auto reads = run_spec(granted);
    EXPECT_EQ(reads.value("READ-OK"), secret()) << reads;
    EXPECT_TRUE(reads.has("WRITE-DENIED:EROFS")) << reads;
    EXPECT_EQ(read_file(sibling / "secret"), secret() + "\n");
    // Elsewhere under the root a read-only grant would uncover another run: refused.
    granted.read_only = {other.run_dir().string()};
    const auto refused = run_spec(granted, Backend::bubblewrap, true);
    EXPECT_EQ(refused.status, 12) << refused;
    EXPECT_NE(refused.err.find("not inside this call's run directory"), std::string::npos)
        << refused;

    // A directory of the run shown read-only in place of an entry of the workspace (exec's
    // private repository over the workspace's .git): the target reads the run's directory there
    // and cannot write it, and the entry's own content is out of reach.
    const auto entry = fs::path{spec.workspace} / "entry";
    fs::create_directory(entry);
    make_file(entry / "own", "own\n", 0644);
    auto over = spec;
    over.read_only_over = {{sibling.string(), entry.string()}};
    over.argv = python(R"PY(
def write(path):
    with open(path, "w") as f:
        f.write("written")
report("SHOWN", lambda: open(sys.argv[1] + "/secret").read().strip())
report("OWN", lambda: open(sys.argv[1] + "/own").read().strip())
report("WRITE", lambda: write(sys.argv[1] + "/secret"))
)PY",
                       {entry.string()});
    const auto shown = run_spec(over);
    EXPECT_EQ(shown.value("SHOWN-OK"), secret()) << shown;
    EXPECT_TRUE(shown.has("OWN-DENIED:ENOENT")) << shown;
    EXPECT_TRUE(shown.has("WRITE-DENIED:EROFS")) << shown;
    EXPECT_EQ(read_file(sibling / "secret"), secret() + "\n");
    // Control: without it the entry shows its own content.
    auto plain = over;
    plain.read_only_over.clear();
    const auto own = run_spec(plain);
    EXPECT_EQ(own.value("OWN-OK"), "own") << own;
    EXPECT_TRUE(own.has("SHOWN-DENIED:ENOENT")) << own;
    // Only the run's own directories may be shown, only inside the workspace, and only over an
    // entry of the same type: anything else is refused before anything runs.
    const std::tuple<fs::path, fs::path, std::string> misplaced[] = {
        {other.run_dir(), entry, "does not lie inside this call's run directory"},
        {sibling, "/etc", "does not lie inside the workspace"},
        {sibling / "secret", entry, "not both directories or both files"}};
    for (const auto &[source, destination, reason] : misplaced) {
        auto moved = over;
        moved.read_only_over = {{source.string(), destination.string()}};
        const auto refusal = run_spec(moved, Backend::bubblewrap, true);
        EXPECT_EQ(refusal.status, 12) << refusal;
        EXPECT_NE(refusal.err.find(reason), std::string::npos) << refusal;
    }
}

TEST_F(Confinement, WithheldFolderOfAConcurrentCallIsNotLentToTheSandbox) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "only root's calls lend their directories to the sandbox identity";
    }
    // Call A keeps its answer key and its work for its owner alone; while A runs, call B's
    // target (the same sandbox identity, seeing the host read-only) looks for them. A's
    // workspace is lent through an idmapped mount in A's own namespace: on the host, where B
    // looks, nothing of it changed owner.
    fs::permissions(withheld(), fs::perms{0700});
    fs::permissions(secret_file(), fs::perms{0600});
    make_file(workspace() / "progress", "a's work", 0600);
    make_file(workspace() / "public", "a's notes", 0644);
    auto a = start(
        {.command = {"/bin/sh", "-c", "echo > started; while [ ! -e go ]; do sleep 0.05; done"},
         .withhold = {withheld().string()},
         .timeout_ms = 30000});
    const bool running = eventually([&] { return fs::exists(workspace() / "started"); });
    struct stat during {};
    ASSERT_EQ(::stat(workspace().c_str(), &during), 0);
    const auto other = base() / "ws-b";
    fs::create_directory(other);
    fs::permissions(other, fs::perms{0755});
    // A's workspace lies under /tmp, which B's view replaces with its own: B is shown it as a
    // system path, read-only, as the host has it while A runs.
    const auto b =
        run({.command = python(R"PY(
report("SECRET", lambda: open(sys.argv[1]).read().strip())
report("LENT", lambda: open(sys.argv[2]).read().strip())
report("PUBLIC", lambda: open(sys.argv[3]).read().strip())
)PY",
                               {secret_file().string(), (workspace() / "progress").string(),
                                (workspace() / "public").string()}),
             .workspace = other.string(),
             .options = {"--system-path", workspace().string()}});
    make_file(workspace() / "go", "", 0644);
    const auto ra = a.wait();
    ASSERT_TRUE(running) << ra;
    EXPECT_EQ(ra.status, 0) << ra;
    EXPECT_EQ(during.st_uid, 0U) << "the workspace changed owner on the host during the call";
    EXPECT_TRUE(b.has("SECRET-DENIED:EACCES")) << b;
    EXPECT_TRUE(b.has("LENT-DENIED:EACCES")) << b;
    // The control: the same probe reaches A's workspace itself, and reads what its mode lets
    // anyone read.
    EXPECT_EQ(b.value("PUBLIC-OK"), "a's notes") << b;
    for (const auto &p : {secret_file(), workspace() / "progress", workspace() / "started"}) {
        struct stat st {};
        ASSERT_EQ(::stat(p.c_str(), &st), 0) << p;
        EXPECT_EQ(st.st_uid, 0U) << p;
    }
}

TEST_F(Confinement, TargetCannotLeaveASetuidFileBehind) {
    // Through an idmapped lent tree what the target makes belongs on disk to the tree's owner
    // (root, here), and nothing is chowned after the call: a setuid program made in the
    // workspace would stay root's for any user who can reach it. Every way to give a file the
    // bits is tried: a change of mode, a mode at creation, a node made with it.
    const auto probe = python(R"PY(
def made(path, fn):
    fn(path)
    return oct(os.stat(path).st_mode & 0o7777)
def chmod_to(mode):
    def fn(path):
        with open(path, "w") as f:
            f.write("#!/bin/sh\nid\n")
        os.chmod(path, mode)
    return fn
def created(mode):
    return lambda path: os.close(os.open(path, os.O_WRONLY | os.O_CREAT, mode))
os.umask(0)
report("SUID", lambda: made("suid", chmod_to(0o4755)))
report("SGID", lambda: made("sgid", chmod_to(0o2755)))
report("CREATED", lambda: made("created", created(0o4755)))
report("NODE", lambda: made("node", lambda p: os.mknod(p, 0o104755)))
report("FCHMOD", lambda: made("fchmod", lambda p: os.fchmod(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644), 0o6755)))
report("PLAIN", lambda: made("plain", chmod_to(0o2644)))
)PY");
    const auto confined = run({.command = probe});
    for (const char *name : {"SUID", "SGID", "CREATED", "NODE", "FCHMOD"}) {
        EXPECT_TRUE(confined.has(std::string{name} + "-DENIED:EPERM")) << name << confined;
    }
    // What sets no privilege is left alone: setgid without group execute is no program's.
    EXPECT_EQ(confined.value("PLAIN-OK"), "0o2644") << confined;
    const std::vector<std::string> made{"suid", "sgid", "created", "node", "fchmod", "plain"};
    for (const auto &name : made) {
        struct stat st {};
        if (::lstat((workspace() / name).c_str(), &st) == 0) {
            EXPECT_FALSE((st.st_mode & S_ISUID) != 0 ||
                         (st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
                << name << " kept mode " << std::oct << st.st_mode;
        }
        fs::remove(workspace() / name);
    }
    // The control: unconfined, the same probe makes each of them.
    const auto control = run({.backend = Backend::opt_out, .command = probe});
    EXPECT_EQ(control.value("SUID-OK"), "0o4755") << control;
    EXPECT_EQ(control.value("SGID-OK"), "0o2755") << control;
    EXPECT_EQ(control.value("CREATED-OK"), "0o4755") << control;
    EXPECT_EQ(control.value("NODE-OK"), "0o4755") << control;
    EXPECT_EQ(control.value("FCHMOD-OK"), "0o6755") << control;
}

TEST_F(Confinement, RootOnlyFileElsewhereIsUnreadable) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "only root's runs hand the target another identity than the invoker's";
    }
    std::string path = (host_dir() / "tea-test-root-secret-XXXXXX").string();
    const int fd = ::mkstemp(path.data());
    ASSERT_GE(fd, 0);
    ::close(fd);
    // Removed however the test ends: a failed assertion or a throw must not leave it behind.
    const struct Unlink {
        std::string path;
        ~Unlink() { ::unlink(path.c_str()); }
    } unlink_at_end{path};
    make_file(path, "root-only", 0600);
    const auto probe = python(R"PY(report("READ", lambda: open(sys.argv[1]).read()))PY", {path});
    const auto [confined, control] = run_both({.command = probe});
    EXPECT_TRUE(confined.has("READ-DENIED:EACCES")) << confined;
    EXPECT_EQ(control.value("READ-OK"), "root-only") << control;
}

TEST_F(Confinement, InheritedDescriptorOfTheWithheldFolderDoesNotReachTheTarget) {
    // Opened without O_CLOEXEC and handed to tea-evaluate as descriptor 5.
    const int dir = ::open(withheld().c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(dir, 0);
    const auto probe = python(R"PY(
report("FD5-READ", lambda: open("/proc/self/fd/5/secret").read().strip())
report("FD5-LIST", lambda: ",".join(os.listdir("/proc/self/fd/5")))
)PY");
    auto confined =
        run({.command = probe, .withhold = {withheld().string()}, .inherit = {{dir, 5}}});
    auto unconfined = run({.backend = Backend::opt_out, .command = probe, .inherit = {{dir, 5}}});
    // The positive control: the same descriptor, inherited the same way by a
    // process the test starts itself, reaches into the folder.
    const auto direct = run_direct(probe, {{dir, 5}});
    ::close(dir);

    EXPECT_TRUE(confined.has("FD5-READ-DENIED:ENOENT")) << confined;
    EXPECT_TRUE(confined.has("FD5-LIST-DENIED:ENOENT")) << confined;
    // The runtime closes what it inherited for every backend, not only bubblewrap.
    EXPECT_TRUE(unconfined.has("FD5-READ-DENIED:ENOENT")) << unconfined;
    EXPECT_EQ(direct.value("FD5-READ-OK"), secret()) << direct;
}

TEST_F(Confinement, TheTargetHoldsOnlyTheStandardDescriptors) {
    // bwrap reads its arguments and the seccomp program from descriptors of the plan; it must
    // close them, and nothing else of the runtime's or bwrap's may reach the target.
    const int file = ::open("/etc/hostname", O_RDONLY);
    ASSERT_GE(file, 0);
    const auto probe = python(R"PY(
fds = []
for n in sorted(os.listdir("/proc/self/fd"), key=int):
    try:
        os.readlink("/proc/self/fd/" + n)
    except OSError:
        continue  # the listing's own descriptor, closed by now
    fds.append(n)
print("FDS:" + ",".join(fds))
)PY");
    const auto confined = run({.command = probe, .inherit = {{file, 7}}});
    // The positive control: a descriptor inherited by a process the test starts is listed.
    const auto direct = run_direct(probe, {{file, 7}});
    ::close(file);
    EXPECT_EQ(confined.value("FDS"), "0,1,2") << confined;
    EXPECT_NE(("," + direct.value("FDS").value_or("") + ",").find(",7,"), std::string::npos)
        << direct;
}

// The file system and mount point of a path, as the target sees them (its mountinfo).
constexpr const char *mount_of = R"PY(
def mount_of(path):
    best = ("", "")
    for line in open("/proc/self/mountinfo"):
        left, right = line.split(" - ", 1)
        point = left.split()[4]
        if path == point or path.startswith(point.rstrip("/") + "/"):
            if len(point) >= len(best[0]):
                best = (point, right.split()[0])
    return best[1] + ":" + best[0]
)PY";

// Every path under `root` whose name is `name`, read while the tree may change.
std::vector<fs::path> find_named(const fs::path &root, const std::string &name) {
    std::vector<fs::path> found;
    std::error_code ec;
    for (fs::recursive_directory_iterator it{root, ec}, end; !ec && it != end; it.increment(ec)) {
        if (it->path().filename() == name) {
            found.push_back(it->path());
        }
    }
    return found;
}

TEST_F(Confinement, TempDirIsATmpfsOfTheCallThatNeverReachesTheHost) {
    const auto file = "tea-tmp-" + random_token();
    const auto ready = workspace() / ("ready-" + random_token());
    const auto go = workspace() / "go";
    auto call = start({.command = python(std::string{mount_of} + R"PY(
tmp = os.environ.get("TMPDIR", "")
print("TMPDIR:" + tmp, flush=True)
report("TMP-WRITE", lambda: open(os.path.join(tmp, sys.argv[1]), "w").write("t"))
report("TMP-LIST", lambda: ",".join(sorted(os.listdir(tmp))))
report("TMP-MOUNT", lambda: mount_of(tmp))
open(sys.argv[1], "w").write("w")  # the same name, in the workspace (the cwd)
open(sys.argv[3], "w").write("ready")
wait_for(sys.argv[2])
)PY",
                                         {file, go.string(), ready.string()}),
                       .timeout_ms = 30000});
    ASSERT_TRUE(eventually([&] { return fs::exists(ready); })) << call.wait();
    // While the call runs and holds its file: nowhere on the host's side of the private root,
    // though the same walk finds the workspace's file of that name (the control).
    const auto in_private_root = find_named(private_root(), file);
    const auto in_workspace = find_named(workspace(), file);
    make_file(go, "", 0644);
    const auto r = call.wait();
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_EQ(r.value("TMPDIR"), "/dev/tea-evaluate-tmp") << r;
    EXPECT_TRUE(r.has("TMP-WRITE-OK")) << r;
    EXPECT_EQ(r.value("TMP-LIST-OK"), file) << r;
    EXPECT_EQ(r.value("TMP-MOUNT-OK"), "tmpfs:/dev/tea-evaluate-tmp") << r;
    EXPECT_TRUE(in_private_root.empty()) << in_private_root.front();
    EXPECT_EQ(in_workspace.size(), 1U) << "the same walk finds the same name where it is";
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator{private_root(), ec}) {
        if (!kept_between_calls(entry.path())) {
            ADD_FAILURE() << "left behind: " << entry.path();
        }
    }
    // The next call gets a temp directory of its own: empty.
    const auto next = run({.command = python(R"PY(
report("TMP-LIST", lambda: ",".join(sorted(os.listdir(os.environ["TMPDIR"]))))
)PY")});
    EXPECT_EQ(next.value("TMP-LIST-OK"), "") << next;
}

// /tmp and /var/tmp are the call's own, each a tmpfs, with only its grants shown at their host
// paths: the workspace lies under /tmp here, so that is the grant shown. What the host keeps
// there beside it (another user's files, a build tree) is absent, and what the target writes there
// never reaches the host.
TEST_P(EitherIdentity, TheCallsTmpIsItsOwnWithOnlyItsGrantsShown) {
    ASSERT_EQ(workspace().string().rfind("/tmp/", 0), 0U) << "the fixture's workspace";
    const auto beside = base() / "beside";
    fs::create_directory(beside);
    fs::permissions(beside, fs::perms{0755});
    make_file(beside / "note", "host-note\n", 0644);
    make_file(workspace() / "given", "given\n", 0644);
    hand_to_caller(workspace() / "given");
    const auto scratch = "tea-bwt-scratch-" + random_token();
    // The control writes the same names on the host.
    const RemovedAtEnd tmp_scratch{fs::path{"/tmp"} / scratch};
    const RemovedAtEnd var_tmp_scratch{fs::path{"/var/tmp"} / scratch};
    const auto probe = python(R"PY(
def write_then_read(path):
    with open(path, "w") as f:
        f.write("mine")
    return open(path).read()
report("WORKSPACE-READ", lambda: open(sys.argv[1]).read().strip())
report("WORKSPACE-WRITE", lambda: write_then_read(sys.argv[2]))
report("TMP", lambda: write_then_read("/tmp/" + sys.argv[4]))
report("VAR-TMP", lambda: write_then_read("/var/tmp/" + sys.argv[4]))
report("BESIDE", lambda: open(sys.argv[3]).read().strip())
)PY",
                              {(workspace() / "given").string(), (workspace() / "written").string(),
                               (beside / "note").string(), scratch});
    // Audited, nothing of it is listed: /tmp is the call's own, like its temp directory.
    std::vector<std::string> strict;
    if (std::getenv("TEA_TEST_UNAUDITED") == nullptr) {  // NOLINT(concurrency-mt-unsafe)
        strict.emplace_back("--strict");
    }
    const auto confined = run({.command = probe, .options = strict});
    EXPECT_EQ(confined.status, 0) << confined;
    EXPECT_EQ(confined.value("WORKSPACE-READ-OK"), "given") << confined;
    EXPECT_EQ(confined.value("WORKSPACE-WRITE-OK"), "mine") << confined;
    EXPECT_EQ(confined.value("TMP-OK"), "mine") << confined;
    EXPECT_EQ(confined.value("VAR-TMP-OK"), "mine") << confined;
    EXPECT_TRUE(confined.has("BESIDE-DENIED:ENOENT")) << confined;
    EXPECT_EQ(read_file(workspace() / "written"), "mine");
    EXPECT_FALSE(fs::exists(fs::path{"/tmp"} / scratch)) << "the call's /tmp reached the host";
    EXPECT_FALSE(fs::exists(fs::path{"/var/tmp"} / scratch));

    const auto control = run({.backend = Backend::opt_out, .command = probe});
    EXPECT_EQ(control.value("BESIDE-OK"), "host-note") << control;
    EXPECT_EQ(control.value("TMP-OK"), "mine") << control;

    // A program the host keeps there is not found, as a shell reports a missing command.
    make_file(beside / "tool", "#!/bin/sh\necho TOOL-RAN\n", 0755);
    const auto tool = run({.command = {(beside / "tool").string()}});
    EXPECT_EQ(tool.status, 127) << tool;
    EXPECT_FALSE(tool.has("TOOL-RAN")) << tool;
    const auto tool_control =
        run({.backend = Backend::opt_out, .command = {(beside / "tool").string()}});
    EXPECT_TRUE(tool_control.has("TOOL-RAN")) << tool_control;
}

TEST_F(Confinement, TempDirIsCappedAtItsSize) {
    // 2 MiB into the temp directory and into the workspace.
    const auto probe = python(R"PY(
block = b"x" * (2 << 20)
report("TMP-BIG", lambda: open(os.path.join(os.environ["TMPDIR"], "big"), "wb").write(block))
report("WS-BIG", lambda: open("big-" + sys.argv[1], "wb").write(block))
)PY",
                              {random_token()});
    const auto capped =
        run({.command = probe, .config = "[plugin.bubblewrap]\ncall_dir_bytes = 1048576\n"});
    const auto uncapped = run({.command = probe});
    EXPECT_EQ(capped.status, 0) << capped;
    EXPECT_TRUE(capped.has("TMP-BIG-DENIED:ENOSPC")) << capped;
    EXPECT_TRUE(capped.has("WS-BIG-OK")) << capped;
    // Control: the same write, under the default size.
    EXPECT_TRUE(uncapped.has("TMP-BIG-OK")) << uncapped;
}

// An unaudited exec's home, made for its one call, is a tmpfs like the temp directory; an audited
// one stays on the host, where the audit reads the links planted in it after the call.
TEST_F(Confinement, UnauditedExecHomeLivesOnlyInsideTheCall) {
    const auto ready = workspace() / ("ready-" + random_token());
    const auto go = workspace() / ("go-" + random_token());
    const auto probe = python(std::string{mount_of} + R"PY(
home = os.environ["HOME"]
report("HOME-WRITE", lambda: open(os.path.join(home, "written"), "w").write("h"))
report("HOME-MOUNT", lambda: mount_of(home).split(":")[0])
open(sys.argv[1], "w").write("ready")
wait_for(sys.argv[2])
)PY",
                              {ready.string(), go.string()});
    auto observe = [&](const std::vector<std::string> &options) {
        fs::remove(ready);
        fs::remove(go);
        auto call = start({.command = probe, .timeout_ms = 30000, .options = options});
        const bool started = eventually([&] { return fs::exists(ready); });
        // What the host holds under the private root while the call runs.
        std::vector<std::string> held;
        std::error_code ec;
        for (const auto &entry : fs::directory_iterator{private_root(), ec}) {
            if (!kept_between_calls(entry.path())) {
                held.push_back(entry.path().filename().string());
            }
        }
        make_file(go, "", 0644);
        auto r = call.wait();
        EXPECT_TRUE(started) << r;
        return std::pair{r, held};
    };
    const auto [unaudited, unaudited_held] = observe({"--observer", "none"});
    const auto [audited, audited_held] = observe({});
    EXPECT_EQ(unaudited.status, 0) << unaudited;
    EXPECT_TRUE(unaudited.has("HOME-WRITE-OK")) << unaudited;
    EXPECT_EQ(unaudited.value("HOME-MOUNT-OK"), "tmpfs") << unaudited;
    EXPECT_TRUE(unaudited_held.empty()) << "the host held " << unaudited_held.front();
    // Control: the audited call's home is a host directory, and the same look finds its run.
    EXPECT_EQ(audited.status, 0) << audited;
    EXPECT_TRUE(audited.has("HOME-WRITE-OK")) << audited;
    EXPECT_NE(audited.value("HOME-MOUNT-OK"), "tmpfs") << audited;
    ASSERT_EQ(audited_held.size(), 1U) << audited;
    EXPECT_TRUE(named_by_the_runtime(audited_held.front(), "run-")) << audited_held.front();
}

TEST_F(Confinement, LeftoverOfAKilledRunIsReclaimedAndALiveRunIsNot) {
    const OtherRun live{private_root(), "live"};
    // A killed run: its lock file is there, nobody holds it.
    const auto killed = private_root() / "run-killed0000001";
    fs::create_directories(killed / "tmp-abandoned");
    make_file(killed / "lock", "", 0600);
    make_file(killed / "tmp-abandoned" / "junk", "junk", 0644);
    const auto r = run({.command = {"true"}});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_FALSE(fs::exists(killed)) << r;
    // The positive control: the same layout with its lock held is left alone.
    EXPECT_TRUE(fs::exists(live.secret_file()));
}

// A run directory without its lock is a killed run's only once it is old: a younger one may be a
// live run's between its mkdir and its lock. And another user's is never touched.
TEST_F(Confinement, AnUnlockedRunDirectoryIsReclaimedOnlyOnceOldAndOnlyIfItIsOurs) {
    const auto young = private_root() / "run-nolockyoung01";
    const auto old = private_root() / "run-nolockold0001";
    const auto others = private_root() / "run-othersstale01";
    for (const auto &dir : {young, old, others}) {
        fs::create_directories(dir / "tmp-abandoned");
    }
    make_file(others / "lock", "", 0600);  // unlocked: stale, were it ours
    const bool root = ::geteuid() == 0;    // only root can make a directory another user's
    if (root) {
        ASSERT_EQ(::chown(others.c_str(), 65534, 65534), 0) << std::strerror(errno);
    }
    // Made two minutes ago, as far as its time says.
    const timespec times[2] = {{0, UTIME_OMIT}, {::time(nullptr) - 120, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, old.c_str(), times, 0), 0) << std::strerror(errno);
    const auto r = run({.command = {"true"}});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_FALSE(fs::exists(old)) << "an old directory without a lock is a killed run's" << r;
    EXPECT_TRUE(fs::exists(young)) << "a young one may be about to be locked" << r;
    EXPECT_EQ(fs::exists(others), root) << "another user's is never touched; ours is" << r;
}

TEST_F(Confinement, ProcSysIsReadOnlyAndSysShowsOnlyDevices) {
    // kernel.msgmax belongs to the IPC namespace, which the sandbox's own user
    // namespace owns: only the read-only mount refuses it (written back unchanged).
    const auto probe = python(R"PY(
print("PROC-SYS:" + ("ro" if os.statvfs("/proc/sys").f_flag & os.ST_RDONLY else "rw"))
def rewrite(path):
    value = open(path).read()
    with open(path, "w") as f:
        f.write(value)
report("MSGMAX", lambda: rewrite("/proc/sys/kernel/msgmax"))
print("SYS:" + ",".join(sorted(os.listdir("/sys"))))
report("SYS-CLASS", lambda: ",".join(os.listdir("/sys/class")[:1]))
report("CPU", lambda: "cpu0" in os.listdir("/sys/devices/system/cpu"))
)PY");
    const auto confined = run({.command = probe});
    EXPECT_EQ(confined.value("PROC-SYS"), "ro") << confined;
    EXPECT_TRUE(confined.has("MSGMAX-DENIED:EROFS")) << confined;
    EXPECT_EQ(confined.value("SYS"), "devices") << confined;
    EXPECT_TRUE(confined.has("SYS-CLASS-DENIED:ENOENT")) << confined;
    // What toolchains need (the CPU list) is still there.
    EXPECT_EQ(confined.value("CPU-OK"), "True") << confined;

    // The control owns a fresh IPC namespace too, so its write touches nothing of the host's.
    auto in_own_ipc = probe;
    in_own_ipc.insert(in_own_ipc.begin(), {"/usr/bin/unshare", "--map-root-user", "--ipc"});
    const auto control = run({.backend = Backend::opt_out, .command = in_own_ipc});
    EXPECT_EQ(control.value("PROC-SYS"), "rw") << control;
    EXPECT_TRUE(control.has("MSGMAX-OK")) << control;
    EXPECT_TRUE(control.has("SYS-CLASS-OK")) << control;
    EXPECT_NE(control.value("SYS").value_or("").find("class"), std::string::npos) << control;
}

}  // namespace
}  // namespace tea::test::bwrap
