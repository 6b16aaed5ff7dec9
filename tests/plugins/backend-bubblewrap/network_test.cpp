// The host's sockets from inside: path sockets outside the workspace,
// abstract sockets and the host's loopback TCP.
#include <sys/stat.h>

#include <filesystem>

#include "harness.hpp"

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
    // Where host services keep theirs: a directory under /tmp, bound by root
    // (the test) and open to every user, so only the confinement stands in the way.
    const auto dir = base() / "sockets";
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms{0755});
    const auto host = Listener::unix_path(dir / "host.sock");
    const auto probe = python(std::string{connect_probe} + R"PY(
unix("HOST", sys.argv[1])
)PY",
                              {(dir / "host.sock").string()});
    const auto [confined, control] = run_both({.command = probe});
    EXPECT_TRUE(confined.has("HOST-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(control.has("HOST-OK")) << control;
}

TEST_F(Confinement, UnixSocketsBeyondTheScannedDepthAndInTheWorkspace) {
    // Deeper than the walk of /tmp goes: found through /proc/net/unix.
    const auto deep = base() / "a" / "b" / "c";
    fs::create_directories(deep);
    for (auto p = deep; p != base(); p = p.parent_path()) {
        fs::permissions(p, fs::perms{0755});
    }
    const auto host = Listener::unix_path(deep / "deep.sock");
    // The call's own workspace: a socket there is the target's to use.
    const auto own = Listener::unix_path(workspace() / "own.sock");
    const auto probe = python(std::string{connect_probe} + R"PY(
unix("DEEP", sys.argv[1])
unix("OWN", sys.argv[2])
)PY",
                              {(deep / "deep.sock").string(), (workspace() / "own.sock").string()});
    const auto [confined, control] = run_both({.command = probe});
    EXPECT_TRUE(confined.has("DEEP-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(confined.has("OWN-OK")) << confined;
    EXPECT_TRUE(control.has("DEEP-OK")) << control;
    EXPECT_TRUE(control.has("OWN-OK")) << control;
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
    struct RemoveDir {
        fs::path path;
        ~RemoveDir() {
            std::error_code ec;
            fs::remove_all(path, ec);
        }
    } const remove_dir{dir};
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
    const auto dir = base() / "odd\nname";
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms{0755});
    const auto host = Listener::unix_path(dir / "s");
    const auto probe = python(std::string{connect_probe} + R"PY(
unix("ODD", sys.argv[1])
)PY",
                              {(dir / "s").string()});
    const auto [confined, control] = run_both({.command = probe});
    EXPECT_TRUE(confined.has("ODD-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(control.has("ODD-OK")) << control;
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
