// How a root runtime lends the call's directories to the sandbox identity (docs/confinement.md,
// "Identity and privileges"): through idmapped mounts in a mount namespace of the call's own, with
// nothing on disk changed; reachable below folders that identity cannot search; gone with the
// call even when the runtime is killed; and by ownership, named, where the file system refuses.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

// What a loan by ownership would change: each entry's owner and ctime.
struct Status {
    uid_t uid;
    gid_t gid;
    long ctime_s;
    long ctime_ns;
    bool operator==(const Status &) const = default;
};

std::map<std::string, Status> statuses(const fs::path &tree) {
    std::map<std::string, Status> out;
    for (const auto &e : fs::recursive_directory_iterator(tree)) {
        struct stat st {};
        if (::lstat(e.path().c_str(), &st) == 0) {
            out[e.path().string()] = {st.st_uid, st.st_gid, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
        }
    }
    return out;
}

// Whether any process of the host holds a mount at `path`.
bool mounted_anywhere(const fs::path &path) {
    const auto needle = " " + path.string() + " ";
    for (const auto &e : fs::directory_iterator("/proc")) {
        std::ifstream mounts{e.path() / "mountinfo"};
        for (std::string line; std::getline(mounts, line);) {
            if (line.find(needle) != std::string::npos) {
                return true;
            }
        }
    }
    return false;
}

const char *const write_probe = R"PY(
report("UID", lambda: os.getuid())
report("OWNER", lambda: os.stat("tree/f1").st_uid)
def append():
    with open("tree/f0", "a") as f:
        f.write("more")
report("APPEND", append)
def make():
    os.mkdir("tree/made")
    with open("tree/made/file", "w") as f:
        f.write("new")
report("MAKE", make)
report("OTHERS", lambda: os.close(os.open("tree/others", os.O_WRONLY)))
)PY";

class LentConfinement : public Confinement {
   protected:
    void SetUp() override {
        Confinement::SetUp();
        if (::geteuid() != 0) {
            GTEST_SKIP() << "only a root runtime lends the call's directories to another identity";
        }
    }
    // workspace/tree with files of the workspace's owner and one of another user.
    void make_tree() {
        fs::create_directories(workspace() / "tree" / "sub");
        for (int i = 0; i < 40; ++i) {
            make_file(workspace() / "tree" / ("f" + std::to_string(i)), "x", 0644);
            make_file(workspace() / "tree" / "sub" / ("g" + std::to_string(i)), "y", 0644);
        }
        make_file(workspace() / "tree" / "others", "theirs", 0644);
        ASSERT_EQ(::chown((workspace() / "tree" / "others").c_str(), 4321, 4321), 0);
    }
};

// A wrapper that runs the rest of its arguments after `script` (sh, given `args` as $1...), in a
// mount namespace of its own: what the script mounts is never the host's.
std::vector<std::string> in_mount_namespace(const std::string &script,
                                            const std::vector<std::string> &args) {
    std::vector<std::string> argv{
        "/usr/bin/unshare",
        "-m",
        "--propagation",
        "private",
        "/bin/sh",
        "-c",
        script + " && shift " + std::to_string(args.size()) + " && exec \"$@\"",
        "sh"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

// Attack: a root runtime lends a workspace to the sandbox identity, and what the target makes
// there is root's on disk: inside a system folder (/etc/cron.d, /usr/local/bin, /var/spool/cron)
// the host would run or trust it. A workspace inside one is refused, exit 12, naming the folder,
// and the target never starts. Each folder is covered by a tmpfs of the test's own in a mount
// namespace of its own, so the host's are never written. Control: the same tmpfs mounted at a
// plain directory is lent and the target writes it.
TEST_F(LentConfinement, AWorkspaceInsideASystemFolderIsRefused) {
    const auto plain = base() / "plain";
    fs::create_directories(plain);
    const auto in_tmpfs_at = [](const fs::path &folder) {
        return in_mount_namespace("mount -t tmpfs tmpfs \"$1\" && mkdir -m 0755 \"$1/ws\"",
                                  {folder.string()});
    };
    // The target writes the workspace and shows what it wrote.
    const std::vector<std::string> writes{"/bin/sh", "-c", "echo written > made && cat made"};
    // Each folder covered, and the system folder it lies in.
    for (const auto &[folder, system] :
         std::vector<std::pair<fs::path, std::string>>{{"/boot", "/boot"},
                                                       {"/var/spool", "/var/spool"},
                                                       {"/usr/local/share", "/usr"},
                                                       {"/etc/opt", "/etc"}}) {
        const auto r = run({.command = writes,
                            .workspace = (folder / "ws").string(),
                            .wrapper = in_tmpfs_at(folder)});
        EXPECT_EQ(r.status, 12) << folder << ": " << r;
        EXPECT_NE(
            r.err.find("the workspace " + (folder / "ws").string() + " lies inside " + system),
            std::string::npos)
            << r;
        EXPECT_EQ(r.out, "") << folder << ": the target ran";
    }
    const auto control = run(
        {.command = writes, .workspace = (plain / "ws").string(), .wrapper = in_tmpfs_at(plain)});
    EXPECT_EQ(control.status, 0) << control;
    EXPECT_EQ(control.out, "written\n");
    // A folder of /boot bound at a plain path lies in /boot still: refused by where it is.
    fs::create_directories(plain / "bound");
    const auto bound = run(
        {.command = writes,
         .workspace = (plain / "bound").string(),
         .wrapper = in_mount_namespace("mount -t tmpfs tmpfs /boot && mkdir -m 0755 /boot/ws && "
                                       "mount --bind /boot/ws \"$1\"",
                                       {(plain / "bound").string()})});
    EXPECT_EQ(bound.status, 12) << bound;
    EXPECT_NE(bound.err.find("lies inside /boot"), std::string::npos) << bound;
    EXPECT_EQ(bound.out, "");
    // Sources beneath /usr/local/src (a container's WORKDIR, say) are never run: lent.
    const auto sources = run({.command = writes,
                              .workspace = "/usr/local/src/ws",
                              .wrapper = in_tmpfs_at("/usr/local/src")});
    EXPECT_EQ(sources.status, 0) << sources;
    EXPECT_EQ(sources.out, "written\n");
}

// Attack: the lend copies the workspace with every mount beneath it, and shows its owner's files
// as the target's. A folder of root's bound beneath a workspace of root's would be the target's to
// write. Such a workspace is refused, exit 12, naming the mount, and the target never starts (the
// bind is made in a mount namespace of the test's own). Control: the same workspace without the
// mount beneath it is lent and written.
TEST_F(LentConfinement, AWorkspaceWithAMountBeneathItIsRefused) {
    const auto roots = base() / "roots";  // a folder of root's, outside every grant
    fs::create_directories(roots);
    fs::permissions(roots, fs::perms{0755});
    fs::create_directories(workspace() / "inner");
    const auto bind_beneath = in_mount_namespace(
        "mount --bind \"$1\" \"$2\"", {roots.string(), (workspace() / "inner").string()});
    const std::vector<std::string> writes{"/bin/sh", "-c",
                                          "echo planted > inner/planted && cat inner/planted"};
    const auto r = run({.command = writes, .wrapper = bind_beneath});
    EXPECT_EQ(r.status, 12) << r;
    EXPECT_NE(r.err.find("has a mount beneath it at " + (workspace() / "inner").string()),
              std::string::npos)
        << r;
    EXPECT_EQ(r.out, "") << "the target ran";
    EXPECT_FALSE(fs::exists(roots / "planted"));
    const auto control = run({.command = writes});
    EXPECT_EQ(control.status, 0) << control;
    EXPECT_EQ(control.out, "planted\n");
}

TEST_F(LentConfinement, NothingInTheWorkspaceChangesOwnerOrCtimeWhileTheTargetWritesIt) {
    make_tree();
    const auto before = statuses(workspace());
    const auto r = run({.command = python(write_probe)});
    EXPECT_EQ(r.status, 0) << r;
    // The target writes the tree as its owner would...
    EXPECT_EQ(r.value("UID-OK"), std::to_string(sandbox_uid())) << r;
    EXPECT_EQ(r.value("OWNER-OK"), std::to_string(sandbox_uid())) << r;
    EXPECT_TRUE(r.has("APPEND-OK")) << r;
    EXPECT_TRUE(r.has("MAKE-OK")) << r;
    // ...but not another user's file, which stays that user's.
    EXPECT_TRUE(r.has("OTHERS-DENIED:EACCES")) << r;
    const auto after = statuses(workspace());
    const std::string tree = (workspace() / "tree").string();
    for (const auto &[path, status] : before) {
        // What the target changed: the file it appended to, and the folder it made an entry in.
        if (path == tree || path == tree + "/f0") {
            continue;
        }
        ASSERT_TRUE(after.count(path) != 0) << path;
        EXPECT_EQ(after.at(path), status) << path << " changed owner or ctime";
    }
    // What it made belongs on disk to the workspace's owner.
    for (const auto &made : {tree + "/made", tree + "/made/file"}) {
        ASSERT_TRUE(after.count(made) != 0) << made;
        EXPECT_EQ(after.at(made).uid, 0U) << made;
        EXPECT_EQ(after.at(made).gid, 0U) << made;
    }
    EXPECT_EQ(after.at(tree + "/f0").uid, 0U);
}

TEST_F(LentConfinement, AWorkspaceOnAFileSystemWithoutIdmapsIsLentByOwnershipAndNamed) {
    // A ramfs refuses idmaps. The call runs in a mount namespace of the test's with one mounted
    // over the workspace: the runtime lends it the old way, says so, and gives every entry back.
    // The same look at owners and ctimes as above sees that loan (the control of that test).
    const auto seen = base() / "seen";
    const std::string script = R"SH(
set -e
ws="$1"; seen="$2"; shift 2
mount -t ramfs none "$ws"
chmod 755 "$ws"
mkdir "$ws/tree"
for i in 1 2 3 4 5 6 7 8; do echo x > "$ws/tree/f$i"; done
stat -c '%n %u %z' "$ws/tree/f8" > "$seen/before"
status=0
"$@" || status=$?
stat -c '%n %u %z' "$ws/tree/f8" > "$seen/after"
exit $status
)SH";
    fs::create_directory(seen);
    const auto probe = python(R"PY(
report("OWNER", lambda: os.stat("tree/f1").st_uid)
def make():
    with open("tree/made", "w") as f:
        f.write("new")
report("MAKE", make)
)PY");
    const auto r =
        run({.command = probe,
             .wrapper = {"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                         script, "sh", workspace().string(), seen.string()}});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(r.err.find("lies on ramfs, which refused an idmapped mount"), std::string::npos) << r;
    EXPECT_EQ(r.value("OWNER-OK"), std::to_string(sandbox_uid())) << r;
    EXPECT_TRUE(r.has("MAKE-OK")) << r;
    std::ifstream before_file{seen / "before"};
    std::ifstream after_file{seen / "after"};
    std::string before;
    std::string after;
    std::getline(before_file, before);
    std::getline(after_file, after);
    // Given back to its owner, with a new ctime: a file the target never touched was chowned.
    ASSERT_FALSE(before.empty()) << r;
    ASSERT_FALSE(after.empty()) << r;
    EXPECT_NE(before, after);
    EXPECT_EQ(after.substr(0, after.find(' ', after.find(' ') + 1)),
              before.substr(0, before.find(' ', before.find(' ') + 1)))
        << "owner not given back";
}

TEST_F(LentConfinement, AWorkspaceBelowAFolderTheSandboxCannotSearchWorksAtItsOwnPath) {
    // Like /root/project: root's 0700 home; and like a project below a user's 0700 folder. Each
    // outside the host's temp directories, where the view shows the folder as the call's
    // namespace covers it, and in /tmp, which the view replaces with the call's own, holding only
    // the way down to the grants.
    std::vector<std::tuple<fs::path, fs::path, uid_t, std::string>> cases;
    for (const auto &at : {host_dir(), base()}) {
        const auto in_tmp = at == base();
        cases.emplace_back(at / "root", at / "root" / "project", uid_t{0},
                           in_tmp ? "project,withheld" : "");
        cases.emplace_back(at / "home" / "alice", at / "home" / "alice" / "src" / "project",
                           uid_t{4321}, in_tmp ? "src,withheld" : "");
    }
    for (const auto &[locked, project, owner, listed] : cases) {
        fs::create_directories(project);
        fs::create_directories(locked / "withheld");
        make_file(locked / "sibling", "private", 0600);
        make_file(locked / "withheld" / "answer", "42", 0644);
        make_file(project / "input", "data", 0644);
        for (auto p = project; p != locked.parent_path(); p = p.parent_path()) {
            ASSERT_EQ(::chown(p.c_str(), owner, owner), 0) << p;
        }
        ASSERT_EQ(::chown((project / "input").c_str(), owner, owner), 0);
        fs::permissions(locked, fs::perms{0700});
        const auto probe = python(R"PY(
report("CWD", lambda: os.getcwd())
report("READ", lambda: open("input").read())
def write():
    with open("output", "w") as f:
        f.write("done")
report("WRITE", write)
report("SIBLING", lambda: os.stat(sys.argv[1]).st_size)
report("LIST", lambda: ",".join(sorted(os.listdir(sys.argv[2]))))
report("WITHHELD", lambda: open(sys.argv[3]).read())
)PY",
                                  {(locked / "sibling").string(), locked.string(),
                                   (locked / "withheld" / "answer").string()});
        // A withheld folder in the covered one too: covered as anywhere, not a failed call.
        const auto confined = run({.command = probe,
                                   .withhold = {(locked / "withheld").string()},
                                   .workspace = project.string()});
        EXPECT_EQ(confined.status, 0) << confined;
        EXPECT_EQ(confined.value("CWD-OK"), project.string()) << confined;
        EXPECT_EQ(confined.value("READ-OK"), "data") << confined;
        EXPECT_TRUE(confined.has("WRITE-OK")) << confined;
        // Nothing else of the folder shows: it is covered, and cannot be listed; in the call's
        // own /tmp it lists only what the view put there.
        EXPECT_TRUE(confined.has("SIBLING-DENIED:ENOENT")) << confined;
        if (listed.empty()) {
            EXPECT_TRUE(confined.has("LIST-DENIED:EACCES")) << confined;
        } else {
            EXPECT_EQ(confined.value("LIST-OK"), listed) << confined;
        }
        EXPECT_TRUE(confined.has("WITHHELD-DENIED:ENOENT")) << confined;
        struct stat st {};
        ASSERT_EQ(::stat((project / "output").c_str(), &st), 0);
        EXPECT_EQ(st.st_uid, owner);
        ASSERT_EQ(::stat(locked.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777U, 0700U) << "the folder's mode changed on the host";
        // The control: unconfined, the same probe sees the folder's other entry.
        fs::remove(project / "output");
        const auto control =
            run({.backend = Backend::opt_out, .command = probe, .workspace = project.string()});
        EXPECT_EQ(control.value("SIBLING-OK"), "7") << control;
        EXPECT_EQ(control.value("LIST-OK"),
                  owner == 0 ? "project,sibling,withheld" : "sibling,src,withheld")
            << control;
        EXPECT_EQ(control.value("WITHHELD-OK"), "42") << control;
    }
}

TEST_F(LentConfinement, AKilledRunLeavesNoMountOfTheWorkspaceBehind) {
    const auto marker = sleep_marker();
    auto call =
        start({.command = {"/bin/sh", "-c", "echo > started; exec sleep \"$1\"", "sh", marker},
               .timeout_ms = 60000});
    const std::vector<std::string> sleeping{"sleep", marker};
    ASSERT_TRUE(eventually([&] { return !processes_running(sleeping).empty(); }))
        << call.wait(std::chrono::seconds{1});
    // The positive control: the call's namespace holds the workspace's idmapped mount...
    const auto target = processes_running(sleeping).front();
    std::ifstream mounts{"/proc/" + std::to_string(target) + "/mountinfo"};
    bool idmapped = false;
    for (std::string line; std::getline(mounts, line);) {
        idmapped = idmapped || (line.find(" " + workspace().string() + " ") != std::string::npos &&
                                line.find("idmapped") != std::string::npos);
    }
    EXPECT_TRUE(idmapped) << "the target's namespace shows no idmapped mount of the workspace";
    EXPECT_TRUE(mounted_anywhere(workspace()));
    // ...which the host's own namespace never shows.
    std::ifstream own{"/proc/self/mountinfo"};
    const std::string host{std::istreambuf_iterator<char>{own}, {}};
    EXPECT_EQ(host.find(" " + workspace().string() + " "), std::string::npos);
    ::kill(call.pid(), SIGKILL);
    call.wait();
    EXPECT_TRUE(eventually([&] { return processes_with(marker).empty(); }));
    // The sandbox's own init and the helper leave after the target; their namespace, and with it
    // the mount, goes with the last of them.
    EXPECT_TRUE(eventually([&] { return !mounted_anywhere(workspace()); }))
        << "a mount of the workspace outlived the run";
    // The next run reclaims whatever directory the killed one left, and nothing stays mounted.
    const auto next = run({.command = {"/bin/true"}});
    EXPECT_EQ(next.status, 0) << next;
    for (const auto &e : fs::directory_iterator(private_root())) {
        EXPECT_NE(e.path().filename().string().rfind("run-", 0), 0U) << e.path();
    }
    struct stat st {};
    ASSERT_EQ(::stat(workspace().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0U);
}

}  // namespace
}  // namespace tea::test::bwrap
