// The host's sockets from inside: path sockets outside the workspace,
// abstract sockets and the host's loopback TCP.
#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "harness.hpp"
#include "util/fd.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

constexpr const char *connect_probe = R"PY(
def unix(name, path):
    def attempt():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(path)
        finally:
            s.close()
    report(name, attempt)
def tcp(name, port):
    report(name, lambda: socket.create_connection(("127.0.0.1", int(port)), timeout=5).close())
)PY";

TEST_P(EitherIdentity, UnixSocketOutsideTheWorkspaceIsRefused) {
    // A host directory the view shows, bound by the test and open to every user, so only the
    // confinement stands in the way: a grant under /tmp, which no other call's view shows (a
    // socket that vanishes where every call masks it would fail the calls that ran beside).
    const auto dir = base() / "sockets";
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms{0755});
    const auto host = Listener::unix_path(dir / "host.sock");
    const auto probe = python(std::string{connect_probe} + R"PY(
unix("HOST", sys.argv[1])
)PY",
                              {(dir / "host.sock").string()});
    const auto [confined, control] =
        run_both({.command = probe, .options = {"--system-path", dir.string()}});
    EXPECT_TRUE(confined.has("HOST-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(control.has("HOST-OK")) << control;
}

TEST_F(Confinement, UnixSocketsBeyondTheScannedDepthAndInTheWorkspace) {
    // Deeper than the walk of a grant under /tmp goes: found through /proc/net/unix.
    const auto grant = base() / "grant";
    const auto deep = grant / "a" / "b" / "c";
    fs::create_directories(deep);
    for (auto p = deep; p != base(); p = p.parent_path()) {
        fs::permissions(p, fs::perms{0755});
    }
    const auto host = Listener::unix_path(deep / "deep.sock");
    // A host process's socket in the call's workspace (a language server's, a dev server's):
    // the workspace is the target's, what listens there is not.
    const auto in_workspace = Listener::unix_path(workspace() / "host.sock");
    // The target's own socket, bound and reached inside the call, stays its own.
    const auto probe = python(std::string{connect_probe} + R"PY(
unix("DEEP", sys.argv[1])
unix("IN-WORKSPACE", sys.argv[2])
if os.path.exists(sys.argv[3]):
    os.unlink(sys.argv[3])  # the confined run's, left behind
own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
own.bind(sys.argv[3])
own.listen(1)
unix("OWN", sys.argv[3])
)PY",
                              {(deep / "deep.sock").string(), (workspace() / "host.sock").string(),
                               (workspace() / ("own-" + random_token(6) + ".sock")).string()});
    const auto [confined, control] =
        run_both({.command = probe, .options = {"--system-path", grant.string()}});
    EXPECT_TRUE(confined.has("DEEP-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(confined.has("IN-WORKSPACE-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(confined.has("OWN-OK")) << confined;
    EXPECT_TRUE(control.has("DEEP-OK")) << control;
    EXPECT_TRUE(control.has("IN-WORKSPACE-OK")) << control;
    EXPECT_TRUE(control.has("OWN-OK")) << control;
}

// A host process that binds its socket by a relative name, in a directory outside every grant.
// /proc/net/unix shows only the name; the runtime finds the file through the holder's working
// directory. With `wander`, the holder leaves that directory after binding, so it cannot.
class RelativeSocketHolder {
   public:
    // With `own_mounts`, the holder runs in a mount namespace of its own (as a container's or a
    // service's with a root of its own would).
    RelativeSocketHolder(const fs::path &dir, const fs::path &scratch, bool wander,
                         bool own_mounts = false)
        : ready_file_(remove_ready(dir)),
          process_(holder_command(dir, wander, own_mounts), {"PATH=/usr/bin:/bin"}, {}, scratch) {
        ready_ = eventually([&] { return fs::exists(ready_file_); });
    }
    [[nodiscard]] bool ready() const { return ready_; }

   private:
    // An earlier holder's mark, gone before this one starts.
    static fs::path remove_ready(const fs::path &dir) {
        std::error_code ec;
        fs::remove(dir / "ready", ec);
        return dir / "ready";
    }

    static std::vector<std::string> holder_command(const fs::path &dir, bool wander,
                                                   bool own_mounts) {
        std::vector<std::string> argv;
        if (own_mounts) {
            argv = {"/usr/bin/unshare", "--mount", "--propagation", "private"};
        }
        const std::vector<std::string> python{
            "/usr/bin/python3", "-I", "-c", R"PY(
import os, socket, sys, time
os.chdir(sys.argv[1])
if os.path.exists("rel.sock"):
    os.unlink("rel.sock")  # an earlier holder's
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("rel.sock")
s.listen(8)
if sys.argv[2] == "wander":
    os.chdir("/")
open(os.path.join(sys.argv[1], "ready"), "w").close()
while True:
    c, _ = s.accept()
    c.close()
)PY", dir.string(), wander ? "wander" : "stay"};
        argv.insert(argv.end(), python.begin(), python.end());
        return argv;
    }

    fs::path ready_file_;
    Process process_;
    bool ready_ = false;
};

TEST_F(Confinement, UnixSocketBoundByARelativeNameIsRefused) {
    // In a grant under /tmp, deeper than its walk goes: only /proc/net/unix, which names it
    // "rel.sock", knows it.
    const auto grant = base() / "grant";
    const auto dir = grant / "x" / "y" / "relative";
    fs::create_directories(dir);
    for (auto p = dir; p != base(); p = p.parent_path()) {
        fs::permissions(p, fs::perms{0755});
    }
    const RelativeSocketHolder holder{dir, base(), false};
    ASSERT_TRUE(holder.ready());
    const auto probe = python(std::string{connect_probe} + R"PY(
unix("RELATIVE", sys.argv[1])
)PY",
                              {(dir / "rel.sock").string()});
    const auto [confined, control] =
        run_both({.command = probe, .options = {"--system-path", grant.string()}});
    EXPECT_EQ(confined.status, 0) << confined;
    EXPECT_TRUE(confined.has("RELATIVE-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(control.has("RELATIVE-OK")) << control;
}

TEST_F(Confinement, AUnixSocketBoundByARelativeNameInAnotherMountNamespaceDoesNotRefuseTheCall) {
    // A holder in a mount namespace of its own names its directory in a tree the sandbox is not
    // built from: not a reason to refuse every call on the host. (Its directory here is the
    // host's too, and the walk of /tmp or the workspace masks what lies there; see
    // docs/confinement.md for what remains.)
    if (::geteuid() != 0) {
        GTEST_SKIP() << "a mount namespace of its own needs root (or a user namespace)";
    }
    const auto dir = base() / "elsewhere";
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms{0755});
    std::optional<RelativeSocketHolder> holder;
    holder.emplace(dir, base(), true, true);
    ASSERT_TRUE(holder->ready());
    const auto r = run({.command = {"/bin/echo", "TARGET-RAN"}});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_TRUE(r.has("TARGET-RAN")) << r;
    // The control: the same holder in the host's mount namespace refuses the call.
    holder.reset();
    holder.emplace(dir, base(), true, false);
    ASSERT_TRUE(holder->ready());
    const auto refused = run({.command = {"/bin/echo", "TARGET-RAN"}});
    EXPECT_EQ(refused.status, 12) << refused;
}

TEST_F(Confinement, AUnixSocketBoundByARelativeNameThatCannotBeFoundRefusesTheCall) {
    // Its holder moved away after binding: the file could be anywhere, and a socket of root's
    // (or of the invoker's own, for an unprivileged run) must never be left reachable, so the
    // call does not run. Run alone (its name holds "UnixSocket"): it refuses every call.
    const auto dir = base() / "wandered";
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms{0755});
    std::optional<RelativeSocketHolder> holder;
    holder.emplace(dir, base(), true);
    ASSERT_TRUE(holder->ready());
    const auto r = run({.command = {"/bin/echo", "TARGET-RAN"}});
    EXPECT_EQ(r.status, 12) << r;
    EXPECT_NE(r.err.find("rel.sock"), std::string::npos) << r;
    EXPECT_FALSE(r.has("TARGET-RAN")) << r;
    // The control: the same call runs once the holder is gone.
    holder.reset();
    const auto after = run({.command = {"/bin/echo", "TARGET-RAN"}});
    EXPECT_EQ(after.status, 0) << after;
    EXPECT_TRUE(after.has("TARGET-RAN")) << after;
}

TEST_F(Confinement, UnixSocketInRunIsRefusedByBothItsNames) {
    // /var/run is a link to /run on this kind of host: the walk masks the socket
    // once, under /run, and the link inside the sandbox leads to that mask.
    if (!fs::is_symlink("/var/run") || fs::canonical("/var/run") != "/run") {
        GTEST_SKIP() << "/var/run is not a link to /run on this host";
    }
    const auto dir = fs::path{"/run"} / ("tea-bwt-" + random_token());
    fs::create_directories(dir);
    // Removed after the listener (declared before it), whatever the test does.
    const RemovedAtEnd remove_dir{dir};
    fs::permissions(dir, fs::perms{0755});
    const auto host = Listener::unix_path(dir / "host.sock");
    const auto probe = python(
        std::string{connect_probe} + R"PY(
unix("RUN", sys.argv[1])
unix("VARRUN", sys.argv[2])
)PY",
        {(dir / "host.sock").string(), ("/var" / dir.relative_path() / "host.sock").string()});
    const auto [confined, control] = run_both({.command = probe});
    EXPECT_TRUE(confined.has("RUN-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(confined.has("VARRUN-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(control.has("RUN-OK")) << control;
    EXPECT_TRUE(control.has("VARRUN-OK")) << control;
}

TEST_F(Confinement, UnixSocketWithANewlineInItsPathIsRefused) {
    // In a grant under /tmp, which the walk reads: /proc/net/unix breaks such a path in two.
    const auto grant = base() / "grant";
    const auto dir = grant / "odd\nname";
    fs::create_directories(dir);
    fs::permissions(grant, fs::perms{0755});
    fs::permissions(dir, fs::perms{0755});
    const auto host = Listener::unix_path(dir / "s");
    const auto probe = python(std::string{connect_probe} + R"PY(
unix("ODD", sys.argv[1])
)PY",
                              {(dir / "s").string()});
    const auto [confined, control] =
        run_both({.command = probe, .options = {"--system-path", grant.string()}});
    EXPECT_TRUE(confined.has("ODD-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(control.has("ODD-OK")) << control;
}

TEST_F(Confinement, UnixSocketBehindAnAclTheSandboxMaySearchIsRefused) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "only root's calls run the target as another account, whose reach an ACL "
                        "can widen past the mode bits";
    }
    // Mode 0700 and root's: by the mode bits the sandbox account cannot reach the socket, but a
    // named ACL entry lets it search the directory. Taking it for unreachable would leave it open.
    const auto grant = base() / "grant";
    const auto dir = grant / "acl";
    fs::create_directories(dir);
    fs::permissions(grant, fs::perms{0755});
    fs::permissions(dir, fs::perms{0700});
    const auto entry = [](std::uint16_t tag, std::uint16_t perm, std::uint32_t id) {
        std::string e(8, '\0');
        std::memcpy(e.data(), &tag, 2);
        std::memcpy(e.data() + 2, &perm, 2);
        std::memcpy(e.data() + 4, &id, 4);
        return e;
    };
    constexpr std::uint32_t none = 0xffffffffU;
    std::string acl{"\x02\0\0\0", 4};  // version 2, then entries in tag order
    acl += entry(0x01, 7, none) + entry(0x02, 1, sandbox_uid()) + entry(0x04, 0, none) +
           entry(0x10, 1, none) + entry(0x20, 0, none);
    if (::setxattr(dir.c_str(), "system.posix_acl_access", acl.data(), acl.size(), 0) != 0) {
        GTEST_SKIP() << "this file system keeps no ACLs: " << std::strerror(errno);
    }
    const auto host = Listener::unix_path(dir / "host.sock");
    const auto probe = python(std::string{connect_probe} + R"PY(
unix("ACL", sys.argv[1])
)PY",
                              {(dir / "host.sock").string()});
    // The ACL does open the way: the sandbox account, unconfined, connects.
    const passwd *account = ::getpwuid(sandbox_uid());
    ASSERT_NE(account, nullptr);
    std::vector<std::string> as_sandbox{"/usr/bin/setpriv",
                                        "--reuid",
                                        std::to_string(sandbox_uid()),
                                        "--regid",
                                        std::to_string(account->pw_gid),
                                        "--clear-groups",
                                        "--"};
    as_sandbox.insert(as_sandbox.end(), probe.begin(), probe.end());
    const auto direct = run_direct(as_sandbox);
    EXPECT_TRUE(direct.has("ACL-OK")) << direct;
    const auto [confined, control] =
        run_both({.command = probe, .options = {"--system-path", grant.string()}});
    EXPECT_TRUE(confined.has("ACL-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(control.has("ACL-OK")) << control;
}

// A socket served from another network namespace (a container's, say, whose socket file lies in a
// host directory): connectable through its path from the host, but absent from the host's
// /proc/net/unix, so only the walk of the socket directories can find it.
class ForeignNetnsListener {
   public:
    explicit ForeignNetnsListener(const fs::path &path) : path_{path} {
        std::array<int, 2> ready{};
        if (::pipe2(ready.data(), O_CLOEXEC) != 0) {
            throw std::runtime_error("pipe2");
        }
        pid_ = ::fork();
        if (pid_ == 0) {
            ::close(ready[0]);
            const int flags = ::geteuid() == 0 ? CLONE_NEWNET : CLONE_NEWUSER | CLONE_NEWNET;
            if (::unshare(flags) != 0) {
                ::_exit(1);
            }
            // Made after the unshare: a socket belongs to the namespace it was made in.
            const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
            sockaddr_un addr{};
            addr.sun_family = AF_UNIX;
            std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
            if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
                ::listen(fd, 64) != 0 || ::chmod(path.c_str(), 0777) != 0) {
                ::_exit(1);
            }
            (void)!::write(ready[1], "r", 1);
            for (;;) {
                ::pause();
            }
        }
        ::close(ready[1]);
        char byte = 0;
        const bool up = ::read(ready[0], &byte, 1) == 1;
        ::close(ready[0]);
        if (!up) {
            if (pid_ > 0) {
                ::waitpid(pid_, nullptr, 0);  // it exited; the destructor will not run to reap it
            }
            throw std::runtime_error(
                "the listener in a network namespace of its own did not start");
        }
    }
    ForeignNetnsListener(const ForeignNetnsListener &) = delete;
    ForeignNetnsListener &operator=(const ForeignNetnsListener &) = delete;
    ~ForeignNetnsListener() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        std::error_code ec;
        fs::remove(path_, ec);
    }

   private:
    fs::path path_;
    pid_t pid_ = -1;
};

bool listed_in_proc_net_unix(const fs::path &path) {
    std::ifstream in{"/proc/net/unix"};
    std::string line;
    while (std::getline(in, line)) {
        if (line.size() >= path.string().size() &&
            line.compare(line.size() - path.string().size(), std::string::npos, path.string()) ==
                0) {
            return true;
        }
    }
    return false;
}

// A directory of the host's /var/tmp; removed with the object.
struct VarTmpDir {
    VarTmpDir() {
        std::string pattern = "/var/tmp/tea-bwt-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) {
            throw std::runtime_error("mkdtemp under /var/tmp");
        }
        path = pattern;
        fs::permissions(path, fs::perms{0755});
    }
    VarTmpDir(const VarTmpDir &) = delete;
    VarTmpDir &operator=(const VarTmpDir &) = delete;
    ~VarTmpDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    fs::path path;
};

// The walk for socket files reads a bounded number of entries (socket_walk_entries). The call's
// workspace (under /tmp here) is not walked: a target that fills it past the bound can neither
// stop later calls nor hide a host socket the walk reaches after it. Nor is another call's
// workspace beside it in /tmp, which is not in this call's view.
TEST_F(Confinement, AWorkspaceFullOfEntriesDoesNotHideAForeignSocketFromTheWalk) {
    constexpr int bound = 5000;
    const auto beside = base() / "another-workspace";
    fs::create_directory(beside);
    for (const auto &dir : {workspace(), beside}) {
        for (int i = 0; i <= bound; ++i) {
            const int fd = ::open((dir / ("f" + std::to_string(i))).c_str(),
                                  O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
            ASSERT_GE(fd, 0) << std::strerror(errno);
            ::close(fd);
        }
    }
    // A grant under /tmp: its socket is found only by a walk that has not used up its bound.
    const auto grant = base() / "grant";
    fs::create_directory(grant);
    fs::permissions(grant, fs::perms{0755});
    const auto socket = grant / "foreign.sock";
    const ForeignNetnsListener foreign{socket};
    ASSERT_FALSE(listed_in_proc_net_unix(socket)) << "the walk alone must find this socket";
    const auto probe = python(std::string{connect_probe} + R"PY(
unix("FOREIGN", sys.argv[1])
)PY",
                              {socket.string()});
    const auto [confined, control] = run_both(
        {.command = probe,
         .config = "[plugin.bubblewrap]\nsocket_walk_entries = " + std::to_string(bound) + "\n",
         .options = {"--system-path", grant.string()}});
    EXPECT_EQ(confined.status, 0) << confined;
    EXPECT_TRUE(confined.has("FOREIGN-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(control.has("FOREIGN-OK")) << control;
}

// A walk cut short by its bound might have passed such a socket by: the call is refused.
TEST_F(Confinement, ASocketWalkCutShortRefusesTheCall) {
    const auto short_walk =
        run({.command = {"true"}, .config = "[plugin.bubblewrap]\nsocket_walk_entries = 1\n"});
    EXPECT_EQ(short_walk.status, 12) << short_walk;
    EXPECT_NE(short_walk.err.find("plugin.bubblewrap.socket_walk_entries"), std::string::npos)
        << short_walk;
    const auto whole_walk = run({.command = {"true"}});
    EXPECT_EQ(whole_walk.status, 0) << whole_walk;
}

// A host socket in /tmp or /var/tmp outside the call's grants is not masked: the target's /tmp
// and /var/tmp are its own, so the socket file is absent from its view.
TEST_P(EitherIdentity, AHostSocketInTmpIsAbsentFromTheView) {
    const auto dir = base() / "agent";
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms{0755});
    const auto in_tmp = Listener::unix_path(dir / "agent.sock");
    const VarTmpDir var_tmp;
    const auto in_var_tmp = Listener::unix_path(var_tmp.path / "service.sock");
    const auto probe =
        python(std::string{connect_probe} + R"PY(
unix("TMP", sys.argv[1])
unix("VAR-TMP", sys.argv[2])
)PY",
               {(dir / "agent.sock").string(), (var_tmp.path / "service.sock").string()});
    const auto [confined, control] = run_both({.command = probe});
    EXPECT_EQ(confined.status, 0) << confined;
    EXPECT_TRUE(confined.has("TMP-DENIED:ENOENT")) << confined;
    EXPECT_TRUE(confined.has("VAR-TMP-DENIED:ENOENT")) << confined;
    EXPECT_TRUE(control.has("TMP-OK")) << control;
    EXPECT_TRUE(control.has("VAR-TMP-OK")) << control;
}

// A grant under /tmp is shown at its host path, and with it what host processes bound there: each
// socket in it is masked, the one the walk alone can find (served from another network namespace)
// and the one deeper than the walk that /proc/net/unix names.
TEST_F(Confinement, ASocketInAGrantUnderTmpIsMasked) {
    const auto grant = base() / "toolchain";
    const auto deep = grant / "a" / "b" / "c";
    fs::create_directories(deep);
    for (auto p = deep; p != base(); p = p.parent_path()) {
        fs::permissions(p, fs::perms{0755});
    }
    make_file(grant / "README", "toolchain\n", 0644);
    const auto agent = Listener::unix_path(grant / "agent.sock");
    const auto deep_socket = Listener::unix_path(deep / "deep.sock");
    const ForeignNetnsListener foreign{grant / "foreign.sock"};
    ASSERT_FALSE(listed_in_proc_net_unix(grant / "foreign.sock"));
    const auto probe = python(std::string{connect_probe} + R"PY(
report("READ", lambda: open(sys.argv[1]).read().strip())
unix("AGENT", sys.argv[2])
unix("FOREIGN", sys.argv[3])
unix("DEEP", sys.argv[4])
)PY",
                              {(grant / "README").string(), (grant / "agent.sock").string(),
                               (grant / "foreign.sock").string(), (deep / "deep.sock").string()});
    const auto [confined, control] =
        run_both({.command = probe, .options = {"--system-path", grant.string()}});
    EXPECT_EQ(confined.status, 0) << confined;
    EXPECT_EQ(confined.value("READ-OK"), "toolchain") << confined;
    EXPECT_TRUE(confined.has("AGENT-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(confined.has("FOREIGN-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(confined.has("DEEP-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(control.has("AGENT-OK")) << control;
    EXPECT_TRUE(control.has("FOREIGN-OK")) << control;
    EXPECT_TRUE(control.has("DEEP-OK")) << control;
}

// A system path under /tmp that is a link shows, at its own path, what it leads to: a mount of
// its own in the view, beside the host's tree where the socket's file really lies. A mask on one
// does not cover the other, so the socket is masked at both.
TEST_F(Confinement, ASocketInAGrantReachedThroughALinkIsMaskedAtBothPaths) {
    const auto tools = host_dir() / "tools";
    fs::create_directories(tools);
    fs::permissions(tools, fs::perms{0755});
    const auto link = base() / "tools-link";
    fs::create_symlink(tools, link);
    const auto agent = Listener::unix_path(tools / "agent.sock");
    const auto probe = python(std::string{connect_probe} + R"PY(
unix("THROUGH-LINK", sys.argv[1])
unix("REAL", sys.argv[2])
)PY",
                              {(link / "agent.sock").string(), (tools / "agent.sock").string()});
    const auto [confined, control] =
        run_both({.command = probe, .options = {"--system-path", link.string()}});
    EXPECT_EQ(confined.status, 0) << confined;
    EXPECT_TRUE(confined.has("THROUGH-LINK-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(confined.has("REAL-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(control.has("THROUGH-LINK-OK")) << control;
    EXPECT_TRUE(control.has("REAL-OK")) << control;
}

// The median of a few calls' durations.
std::chrono::milliseconds median(std::vector<std::chrono::milliseconds> times) {
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// 200,000 entries of someone else's under /tmp (a build tree, a package cache) neither refuse a
// call nor slow it: no call reads /tmp beyond its own grants. Calls alternate between the tree in
// place, two levels under /tmp, and the same tree parked five levels down, where no walk of /tmp
// ever read it, so both kinds of call meet the same machine.
TEST_F(Confinement, ABusyTmpNeitherRefusesNorSlowsACall) {
    constexpr int entries = 200000;
    constexpr int rounds = 5;
    const auto in_place = base() / "busy";
    const auto parked = base() / "p" / "q" / "r" / "busy";
    fs::create_directories(in_place);
    fs::create_directories(parked.parent_path());
    // Names of a few files (a file takes at most 65,000 names on ext4): a new name costs a
    // twentieth of a new file here, and a walk of the directory reads each name as an entry.
    constexpr int names_per_file = 50000;
    // Named through descriptors and a buffer: 200,000 paths built as objects cost the sanitized
    // build a minute.
    const tea::UniqueFd from{::open(base().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    const tea::UniqueFd into{::open(in_place.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    ASSERT_TRUE(from && into) << std::strerror(errno);
    std::array<char, 32> file{};
    std::array<char, 32> name{};
    for (int i = 0; i < entries; ++i) {
        std::snprintf(file.data(), file.size(), "linked-%d", i / names_per_file);
        if (i % names_per_file == 0) {
            make_file(base() / file.data(), "", 0644);
        }
        std::snprintf(name.data(), name.size(), "f%d", i);
        ASSERT_EQ(::linkat(from.get(), file.data(), into.get(), name.data(), 0), 0)
            << std::strerror(errno);
    }
    std::vector<std::chrono::milliseconds> with;
    std::vector<std::chrono::milliseconds> without;
    for (int round = 0; round < rounds; ++round) {
        fs::rename(in_place, parked);
        const auto quiet = run({.command = {"true"}});
        ASSERT_EQ(quiet.status, 0) << quiet;
        without.push_back(quiet.elapsed);
        fs::rename(parked, in_place);
        const auto busy = run({.command = {"true"}});
        ASSERT_EQ(busy.status, 0) << busy;
        with.push_back(busy.elapsed);
    }
    const auto quiet = median(without);
    const auto busy = median(with);
    EXPECT_LT(busy, std::max(2 * quiet, quiet + std::chrono::milliseconds{50}))
        << "median of " << rounds << " calls: " << busy.count() << " ms with the tree in /tmp, "
        << quiet.count() << " ms with it parked";
}

TEST_F(Confinement, AbstractUnixSocketIsUnreachable) {
    const auto name = "tea-bwt-" + random_token();
    const auto host = Listener::unix_abstract(name);
    const auto probe = python(std::string{connect_probe} + R"PY(
unix("ABSTRACT", "\0" + sys.argv[1])
)PY",
                              {name});
    const auto [confined, control] = run_both({.command = probe});
    EXPECT_TRUE(confined.has("ABSTRACT-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(control.has("ABSTRACT-OK")) << control;
}

TEST_P(EitherIdentity, HostLoopbackTcpIsUnreachable) {
    const auto host = Listener::tcp_loopback();
    const auto probe = python(std::string{connect_probe} + R"PY(
tcp("TCP", sys.argv[1])
)PY",
                              {std::to_string(host.port())});
    const auto [confined, control] = run_both({.command = probe});
    EXPECT_TRUE(confined.has("TCP-DENIED:ECONNREFUSED") || confined.has("TCP-DENIED:ENETUNREACH"))
        << confined;
    EXPECT_TRUE(control.has("TCP-OK")) << control;
}

}  // namespace
}  // namespace tea::test::bwrap
