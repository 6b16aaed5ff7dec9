// The grader's view (a launch spec with role "grader"): outside the target's confinement, with
// the host's network, identity and writable places, and only its read-only paths (the evaluation
// folder, the git directory) protected. Each protection is shown holding, and the same probe
// succeeding when the path is not listed.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "harness.hpp"
#include "support/process.hpp"
#include "support/socket_io.hpp"
#include "util/fd.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

// What a grader that meant harm, or had a bug, would try on the protected paths.
constexpr const char *tamper_probe = R"PY(
protected, hooks, work = sys.argv[1], sys.argv[2], sys.argv[3]
def append(path):
    with open(path, "a") as f:
        f.write("tampered\n")
def create(path):
    with open(path, "w") as f:
        f.write("planted\n")
report("READ", lambda: open(protected + "/secret").read().strip())
report("REWRITE", lambda: append(protected + "/secret"))
report("PLANT", lambda: create(protected + "/planted"))
report("HOOK", lambda: create(hooks + "/pre-commit"))
report("RENAME", lambda: os.rename(protected + "/secret", protected + "/moved"))
report("WORK", lambda: create(work + "/grade.json"))
)PY";

std::string net_namespace_of_this_process() {
    return fs::read_symlink("/proc/self/ns/net").string();
}

class Grader : public EitherIdentity {
   protected:
    // The protected tree: the withheld folder of the fixture, with a hooks directory below it
    // (a git directory's hooks/ stands for every nested place).
    [[nodiscard]] fs::path hooks() const { return withheld() / "hooks"; }

    void SetUp() override {
        EitherIdentity::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        fs::create_directories(hooks());
        hand_to_caller(withheld());
    }

    [[nodiscard]] std::vector<std::string> tamper() const {
        return python(tamper_probe,
                      {withheld().string(), hooks().string(), (workspace() / "out").string()});
    }
};

TEST_P(Grader, ReadOnlyPathsRefuseEveryWriteAndTheWorkingDirectoryDoesNot) {
    fs::create_directories(workspace() / "out");
    hand_to_caller(workspace() / "out");
    const auto confined = run_spec(grader_spec(tamper(), {withheld().string()}));

    EXPECT_EQ(confined.status, 0) << confined;
    EXPECT_EQ(confined.value("READ-OK"), secret()) << confined;
    EXPECT_TRUE(confined.has("REWRITE-DENIED:EROFS")) << confined;
    EXPECT_TRUE(confined.has("PLANT-DENIED:EROFS")) << confined;
    EXPECT_TRUE(confined.has("HOOK-DENIED:EROFS")) << "a nested directory is protected too\n"
                                                   << confined;
    EXPECT_TRUE(confined.has("RENAME-DENIED:EROFS")) << confined;
    EXPECT_TRUE(confined.has("WORK-OK")) << confined;
    EXPECT_EQ(read_file(secret_file()), secret() + "\n") << "the file is unchanged on the host";
    EXPECT_FALSE(fs::exists(withheld() / "planted"));
    EXPECT_FALSE(fs::exists(hooks() / "pre-commit"));

    // The same grader with the folder not listed: every write goes through.
    fs::remove(workspace() / "out" / "grade.json");
    const auto control = run_spec(grader_spec(tamper(), {}));
    EXPECT_EQ(control.status, 0) << control;
    EXPECT_TRUE(control.has("REWRITE-OK")) << control;
    EXPECT_TRUE(control.has("PLANT-OK")) << control;
    EXPECT_TRUE(control.has("HOOK-OK")) << control;
    EXPECT_TRUE(control.has("RENAME-OK")) << control;
    EXPECT_TRUE(control.has("WORK-OK")) << control;
    EXPECT_TRUE(fs::exists(hooks() / "pre-commit"));
}

TEST_P(Grader, KeepsTheHostsNetworkWhereATargetHasItsOwn) {
    const auto probe = python(R"PY(report("NET", lambda: os.readlink("/proc/self/ns/net")))PY");
    const auto host = net_namespace_of_this_process();

    const auto grader = run_spec(grader_spec(probe, {withheld().string()}));
    EXPECT_EQ(grader.value("NET-OK"), host) << grader;

    // Control: a target's plan has a network namespace of its own.
    const auto target = run({.command = probe});
    ASSERT_TRUE(target.value("NET-OK")) << target;
    EXPECT_NE(target.value("NET-OK"), host) << target;
}

// With an egress route (a rubric judge's or a sealed-brief agent's `egress`) the grader loses the
// host's network: a namespace of its own, where a host's loopback server is out of reach and the
// shim on the route's port carries a connection to the route's socket, here a listener of the
// test's standing for the runtime's proxy. Control: the same probe without a route reaches the
// host's server and finds no shim.
TEST_P(Grader, WithARouteHasANetworkOfItsOwnLeftOnlyThroughTheShim) {
    std::uint16_t host_port = 0;
    const tea::UniqueFd host_server{tea::test::listen_loopback(AF_INET, host_port)};
    ASSERT_TRUE(host_server.valid());
    const auto route_dir = base() / "route";
    fs::create_directories(route_dir);
    const auto socket_path = route_dir / "proxy.sock";
    const tea::UniqueFd proxy{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    ASSERT_LT(socket_path.string().size(), sizeof address.sun_path);
    std::memcpy(address.sun_path, socket_path.c_str(), socket_path.string().size());
    ASSERT_EQ(::bind(proxy.get(), reinterpret_cast<sockaddr *>(&address), sizeof address), 0);
    ASSERT_EQ(::listen(proxy.get(), 8), 0);
    hand_to_caller(route_dir);
    constexpr std::uint16_t kShimPort = 3128;
    const auto probe = python(R"PY(
host_port, shim_port = int(sys.argv[1]), int(sys.argv[2])
report("NET", lambda: os.readlink("/proc/self/ns/net"))
report("HOST", lambda: socket.create_connection(("127.0.0.1", host_port), timeout=5).close())
def through_shim():
    s = socket.create_connection(("127.0.0.1", shim_port), timeout=5)
    s.sendall(b"through the route")
    s.close()
report("SHIM", through_shim)
)PY",
                              {std::to_string(host_port), std::to_string(kShimPort)});
    const auto host = net_namespace_of_this_process();

    auto spec = grader_spec(probe, {withheld().string()});
    const auto prefix = fs::path{spec.helper_dir};
    spec.egress = {socket_path.string(), kShimPort, (prefix / "tea-egress-shim").string()};
    std::string carried;
    std::thread proxy_side([&] {
        pollfd p{proxy.get(), POLLIN, 0};
        if (::poll(&p, 1, 30000) != 1) return;
        const tea::UniqueFd c{::accept4(proxy.get(), nullptr, nullptr, SOCK_CLOEXEC)};
        char buffer[64];
        for (ssize_t n; c.valid() && (n = ::recv(c.get(), buffer, sizeof buffer, 0)) > 0;) {
            carried.append(buffer, static_cast<std::size_t>(n));
        }
    });
    const auto routed = run_spec(spec);
    proxy_side.join();
    EXPECT_EQ(routed.status, 0) << routed;
    ASSERT_TRUE(routed.value("NET-OK")) << routed;
    EXPECT_NE(routed.value("NET-OK"), host) << routed;
    EXPECT_TRUE(routed.has("HOST-DENIED:ECONNREFUSED")) << routed;
    EXPECT_TRUE(routed.has("SHIM-OK")) << routed;
    EXPECT_EQ(carried, "through the route");

    const auto control = run_spec(grader_spec(probe, {withheld().string()}));
    EXPECT_EQ(control.value("NET-OK"), host) << control;
    EXPECT_TRUE(control.has("HOST-OK")) << control;
    EXPECT_TRUE(control.has("SHIM-DENIED:ECONNREFUSED")) << control;
}

TEST_P(Grader, RunsAsTheInvokerWithNoCapabilitySoItCannotRemount) {
    const auto probe = python(R"PY(
import subprocess
def status(field, text):
    return [l.split()[1] for l in text.splitlines() if l.startswith(field + ":")][0]
report("UID", lambda: os.getuid())
report("CAPEFF", lambda: status("CapEff", open("/proc/self/status").read()))
# A new program run by uid 0 would regain every capability without no_new_privs.
report("CHILD-CAPEFF", lambda: status("CapEff", subprocess.run(
    ["/bin/cat", "/proc/self/status"], capture_output=True, text=True).stdout))
MS_REMOUNT, MS_BIND = 32, 4096
report("REMOUNT", lambda: zero(libc.mount(None, sys.argv[1].encode(), None,
                                          MS_REMOUNT | MS_BIND, None)))
report("UMOUNT", lambda: zero(libc.umount2(sys.argv[1].encode(), 2)))
subprocess.run(["/bin/mount", "-o", "remount,rw", sys.argv[1]], capture_output=True)
# In a user namespace of its own the grader has capabilities again, but over locked mounts.
subprocess.run(["/usr/bin/unshare", "-Urm", "/bin/sh", "-c",
                'mount -o remount,rw "$1"; umount -l "$1"; echo x >> "$1/secret"', "sh",
                sys.argv[1]], capture_output=True)
def append():
    with open(sys.argv[1] + "/secret", "a") as f:
        f.write("after remount\n")
report("WRITE", append)
)PY",
                              {withheld().string()});
    const auto r = run_spec(grader_spec(probe, {withheld().string()}));

    EXPECT_EQ(r.status, 0) << r;
    EXPECT_EQ(r.value("UID-OK"), std::to_string(call_uid())) << r;
    EXPECT_EQ(r.value("CAPEFF-OK"), "0000000000000000") << r;
    EXPECT_EQ(r.value("CHILD-CAPEFF-OK"), "0000000000000000") << r;
    EXPECT_TRUE(r.has("REMOUNT-DENIED:EPERM")) << r;
    EXPECT_TRUE(r.has("UMOUNT-DENIED:EPERM")) << r;
    EXPECT_TRUE(r.has("WRITE-DENIED:EROFS")) << r;
    EXPECT_EQ(read_file(secret_file()), secret() + "\n");
}

TEST_P(Grader, EnvironmentIsTheSpecsWithTheWorkingDirectory) {
    auto spec = grader_spec(
        python(
            R"PY(report("ENV", lambda: ",".join(sorted(k + "=" + v for k, v in os.environ.items()))))PY"),
        {withheld().string()});
    spec.env.emplace_back("TEA_GRADER_MARK=" + secret());
    const auto r = run_spec(spec);
    // bwrap names the directory it started the grader in, as a shell would.
    EXPECT_EQ(r.value("ENV-OK"), "LANG=C.UTF-8,PATH=/usr/bin:/bin,PWD=" + workspace().string() +
                                     ",TEA_GRADER_MARK=" + secret())
        << r;
}

INSTANTIATE_TEST_SUITE_P(Identities, Grader,
                         ::testing::Values(Identity::invoker, Identity::unprivileged),
                         identity_name);

// The helper's init behind the shim runs the grader only as the child of a namespace's first
// process: started anywhere else (here, the test's child) it would leave the grader with no init
// that ends it with the runtime. An option it does not know is refused too. (The control is the
// routed grader above, run behind the shim.)
TEST_F(Confinement, TheGradersInitBehindTheShimRunsNothingElsewhere) {
    for (const std::vector<std::string> &options :
         {std::vector<std::string>{"--namespace-init", "egress-shim"},
          {"--namespace-init", "anything"}}) {
        std::vector<std::string> argv{TEA_SANDBOX_HELPER_BIN, "init"};
        argv.insert(argv.end(), options.begin(), options.end());
        argv.insert(argv.end(), {"--", "/bin/echo", "RAN"});
        Process init(argv, base_env(), {}, base());
        const auto r = init.wait(std::chrono::seconds{10});
        EXPECT_EQ(r.status, 125) << r;
        EXPECT_EQ(r.out.find("RAN"), std::string::npos) << r;
        EXPECT_NE(r.err.find(options[1] == "egress-shim" ? "not the namespace's first process"
                                                           : "unknown option"),
                  std::string::npos)
            << r;
    }
}

void expect_refused(const Result &r, const std::string &named) {
    EXPECT_EQ(r.status, 12) << r;
    EXPECT_NE(r.err.find(named), std::string::npos) << "the refusal names " << named << "\n" << r;
    EXPECT_TRUE(r.out.empty()) << "nothing ran\n" << r;
}

TEST_F(Confinement, GraderSpecsThatCannotBeHonouredAreRefused) {
    const auto probe = python(R"PY(print("RAN"))PY");

    const auto missing = (base() / "no-such-dir").string();
    expect_refused(run_spec(grader_spec(probe, {missing})), missing);

    const auto link = base() / "link-to-tea";
    fs::create_directory_symlink(withheld(), link);
    expect_refused(run_spec(grader_spec(probe, {link.string()})), link.string());
    const auto through = (link / "hooks").string();
    fs::create_directories(withheld() / "hooks");
    expect_refused(run_spec(grader_spec(probe, {through})), through);

    const auto quoted = base() / "it's";
    fs::create_directories(quoted);
    expect_refused(run_spec(grader_spec(probe, {quoted.string()})), "quote");

    auto withholding = grader_spec(probe, {});
    withholding.withhold = {withheld().string()};
    expect_refused(run_spec(withholding), "withhold");

    // The working directory inside a protected path could never be written.
    auto inside = grader_spec(probe, {workspace().string()});
    inside.workspace = inside.cwd = withheld().string();
    expect_refused(run_spec(inside), "read-only path");

    // A route the grader could not be given as named: no port, a relative socket.
    auto portless = grader_spec(probe, {});
    portless.egress = {(base() / "proxy.sock").string(), 0, "/bin/true"};
    expect_refused(run_spec(portless), "egress.port");
    auto relative = grader_spec(probe, {});
    relative.egress = {"proxy.sock", 3128, "/bin/true"};
    expect_refused(run_spec(relative), "egress socket path is not absolute");

    // A role no backend knows is never run under another view, by either backend.
    auto doc = nlohmann::json::parse(tea::exec::to_json(grader_spec(probe, {})));
    doc["role"] = "judge";
    for (const auto backend : {Backend::bubblewrap, Backend::opt_out}) {
        expect_refused(run_spec(doc.dump(), backend), "role");
    }
}

TEST_F(Confinement, GraderPlanIsBubblewrapsAndOptOutSaysTheViewWasNotApplied) {
    const auto spec = grader_spec({"/bin/true"}, {withheld().string()});
    const auto planned = run_spec(spec, Backend::bubblewrap, true);
    ASSERT_EQ(planned.status, 0) << planned;
    const auto plan = nlohmann::json::parse(planned.out);
    EXPECT_EQ(plan["confinement"], "bubblewrap");
    EXPECT_EQ(plan["report"], nlohmann::json({{"role", "grader"}}));
    // The grader runs as the invoking user, with nothing lent and no audit hints.
    for (const char *absent : {"runAs", "lend", "audit"}) {
        EXPECT_FALSE(plan.contains(absent)) << absent << " in " << planned.out;
    }

    const auto opt_out = run_spec(spec, Backend::opt_out, true);
    ASSERT_EQ(opt_out.status, 0) << opt_out;
    const auto unconfined = nlohmann::json::parse(opt_out.out);
    EXPECT_EQ(unconfined["confinement"], "opt-out");
    EXPECT_EQ(unconfined["report"]["role"], "grader");
    EXPECT_EQ(unconfined["report"]["graderView"], "not applied");

    // Under opt-out the same grader rewrites what bubblewrap protects.
    const auto rewrite = run_spec(
        grader_spec(python(R"PY(report("REWRITE", lambda: open(sys.argv[1], "a").write("x")))PY",
                           {secret_file().string()}),
                    {withheld().string()}),
        Backend::opt_out);
    EXPECT_TRUE(rewrite.has("REWRITE-OK")) << rewrite;
}

}  // namespace
}  // namespace tea::test::bwrap
