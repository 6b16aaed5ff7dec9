// A started service under bubblewrap reached through the runtime's bridge (ABI 1.9): the session
// makes the bridge's directory, the plan starts tea-bridge-relay beside the service inside the
// call's namespaces, and the host's ServiceBridge (driven from tea-plan-call, the plan's ancestor,
// as the runtime drives it) reads the port file as hostile, checks the port in the call's own
// network and carries clients in. Each attack is shown under real bwrap for both identities; the
// same service under opt-out, reachable the same way, is the control.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

// python3's http.server as the service. argv: MODE STOP [PORT]. It listens on 127.0.0.1 (0.0.0.0
// for "any"), answers every GET with "tea-bridge-ok", and writes what MODE says to the port file:
// its port ("loopback", "any"), "eighty" ("garbage"), 99999999999 ("huge"), PORT ("port"), or
// makes the file a link to /etc/passwd ("link") or a fifo ("fifo"). "planted" writes its port and
// replaces the relay's socket with a link to PORT (a path); "daemon" first starts a double-forked,
// setsid daemon sleeping the marker PORT. It ends once STOP exists.
constexpr const char *kService = R"PY(
import http.server, os, sys, threading, time
mode, stop = sys.argv[1], sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else ""
class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"tea-bridge-ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
s = http.server.HTTPServer(("0.0.0.0" if mode == "any" else "127.0.0.1", 0), Answer)
threading.Thread(target=s.serve_forever, daemon=True).start()
port_file = os.environ["TEA_PORT_FILE"]
if mode == "daemon":
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", arg])
        os._exit(0)
    os.wait()
if mode == "planted":
    sock = os.path.join(os.path.dirname(port_file), "bridge.sock")
    os.unlink(sock)
    os.symlink(arg, sock)
written = {"garbage": "eighty", "huge": "99999999999", "port": arg}.get(mode, str(s.server_port))
if mode == "link":
    os.unlink(port_file)
    os.symlink("/etc/passwd", port_file)
elif mode == "fifo":
    os.unlink(port_file)
    os.mkfifo(port_file)
else:
    with open(port_file, "w") as f:
        f.write(written)
for _ in range(600):
    if os.path.exists(stop):
        break
    time.sleep(0.05)
)PY";

// curl's status and body, and Python's urllib's, through the bridge's host port.
constexpr const char *kClients =
    "curl -s --max-time 10 -w ' %{http_code}' http://127.0.0.1:$BRIDGE_PORT/; echo -n ' '; "
    "python3 -c 'import os, urllib.request; r = urllib.request.urlopen("
    "\"http://127.0.0.1:\" + os.environ[\"BRIDGE_PORT\"] + \"/\", timeout=10); "
    "print(r.status, r.read().decode(), end=\"\")' 2>&1";

class ServiceBridge : public EitherIdentity {
   protected:
    // The service's call through the session with a bridge; `client` runs on the host once it is
    // open.
    Result call(Backend backend, const std::string &mode, const std::string &arg = "",
                const std::string &observer = "none", const std::string &client = kClients) {
        const auto stop = workspace() / ("stop-" + random_token());
        auto spec = target_spec({"/usr/bin/python3", "-c", kService, mode, stop.string()});
        if (!arg.empty()) {
            spec.argv.push_back(arg);
        }
        // Made by the session, like every call's.
        spec.home.clear();
        spec.unmade.clear();
        auto r = run_bridged(spec, backend, observer, client, stop);
        std::error_code ec;
        fs::remove(stop, ec);
        return r;
    }
};

TEST_P(ServiceBridge, AServiceOnLoopbackIsReachedByCurlAndUrllibAsUnderOptOut) {
    const auto confined = call(Backend::bubblewrap, "loopback");
    EXPECT_EQ(confined.value("BRIDGE-CLIENT"), "tea-bridge-ok 200 200 tea-bridge-ok") << confined;
    EXPECT_EQ(confined.status, 0) << confined;
    // The bridge's directory went with the call.
    const auto dir = confined.value("BRIDGE-DIR");
    ASSERT_TRUE(dir) << confined;
    EXPECT_FALSE(fs::exists(*dir)) << confined;
    const auto control = call(Backend::opt_out, "loopback");
    EXPECT_EQ(control.value("BRIDGE-CLIENT"), "tea-bridge-ok 200 200 tea-bridge-ok") << control;
}

// The relay's own set-up (its socket, its streams) is the mechanism's, not the target's: an
// audited call lists none of it, and the bridge still carries clients.
TEST_P(ServiceBridge, AnAuditedCallListsNothingOfTheRelay) {
    const auto r = call(Backend::bubblewrap, "loopback", "", "strace");
    EXPECT_EQ(r.value("BRIDGE-CLIENT"), "tea-bridge-ok 200 200 tea-bridge-ok") << r;
    const auto audit = r.err.find("AUDIT:");
    ASSERT_NE(audit, std::string::npos) << r;
    const auto line = r.err.substr(audit, r.err.find('\n', audit) - audit);
    EXPECT_EQ(line.find("bridge"), std::string::npos) << line;
    EXPECT_EQ(line.find("/dev/null"), std::string::npos) << line;
}

TEST_P(ServiceBridge, AServiceOnEveryAddressIsRefusedNamingIt) {
    const auto r = call(Backend::bubblewrap, "any");
    const auto refusal = r.value("BRIDGE-REFUSED");
    ASSERT_TRUE(refusal) << r;
    EXPECT_NE(refusal->find("0.0.0.0"), std::string::npos) << r;
    EXPECT_FALSE(r.value("BRIDGE-CLIENT")) << r;
}

TEST_P(ServiceBridge, APortFileThatIsNoPortIsRefusedNamingIt) {
    for (const auto &[mode, named] :
         {std::pair{"garbage", "eighty"}, std::pair{"huge", "99999999999"},
          std::pair{"link", "symbolic link"}, std::pair{"fifo", "port"}}) {
        const auto r = call(Backend::bubblewrap, mode);
        const auto refusal = r.value("BRIDGE-REFUSED");
        ASSERT_TRUE(refusal) << mode << "\n" << r;
        EXPECT_NE(refusal->find(named), std::string::npos) << mode << "\n" << r;
        EXPECT_EQ(refusal->find("root:"), std::string::npos) << r;  // /etc/passwd never quoted
    }
}

// A port a host process listens on, with nothing listening at it inside the call: the check reads
// the call's own network, so the bridge never opens. Under opt-out the service shares the host's
// network, and the same port file opens the bridge onto the host's listener: the control that the
// port does listen where the runtime itself runs.
TEST_P(ServiceBridge, AHostProcesssPortIsRefused) {
    const auto host = Listener::tcp_loopback();
    const auto port = std::to_string(host.port());
    const auto r = call(Backend::bubblewrap, "port", port, "none", "echo reached");
    const auto refusal = r.value("BRIDGE-REFUSED");
    ASSERT_TRUE(refusal) << r;
    EXPECT_NE(refusal->find("nothing listens on port " + port), std::string::npos) << r;
    const auto control = call(Backend::opt_out, "port", port, "none", "echo reached");
    EXPECT_EQ(control.value("BRIDGE-CLIENT"), "reached") << control;
}

// The service replaces the relay's socket with a link to a host socket: the host listener never
// follows it, so no client reaches the host socket (a connect by path, the control, does).
TEST_P(ServiceBridge, APlantedLinkInPlaceOfTheRelaysSocketIsNotFollowed) {
    const auto host_socket = host_dir() / "host.sock";
    const auto host = Listener::unix_path(host_socket);
    const auto r = call(Backend::bubblewrap, "planted", host_socket.string());
    // The host listener opens (the port file is the service's true port) and closes each client:
    // curl's 000, urllib's error.
    const auto reply = r.value("BRIDGE-CLIENT");
    ASSERT_TRUE(reply) << r;
    EXPECT_EQ(reply->find("tea-bridge-ok"), std::string::npos) << r;
    EXPECT_EQ(reply->rfind(" 000", 0), 0U) << r;
    const auto link = base() / "link.sock";
    fs::create_symlink(host_socket, link);
    const auto by_path = run_direct({"/usr/bin/python3", "-c",
                                     "import socket, sys\n"
                                     "s = socket.socket(socket.AF_UNIX)\n"
                                     "s.connect(sys.argv[1])\n"
                                     "print('CONNECTED')\n",
                                     link.string()});
    EXPECT_TRUE(by_path.has("CONNECTED")) << by_path;
}

// A service that leaves a daemon behind (setsid, double fork): seen running while the call runs,
// gone once the call has ended.
TEST_P(ServiceBridge, ADaemonTheServiceStartsEndsWithTheCall) {
    const auto marker = sleep_marker();
    const auto r =
        call(Backend::bubblewrap, "daemon", marker, "none",
             "pgrep -f 'sleep " + marker + "' >/dev/null && echo -n 'daemon ' ; " + kClients);
    EXPECT_EQ(r.value("BRIDGE-CLIENT"), "daemon tea-bridge-ok 200 200 tea-bridge-ok") << r;
    EXPECT_TRUE(eventually([&] { return processes_with("sleep " + marker).empty(); })) << r;
}

// The plan of a call with a bridge, in every way the plugin can be asked for one (unaudited,
// staged, audited, with a route out): bwrap starts the relay through its descriptor in front of
// the helper (after the egress shim, which stays the namespace's init), the bridge's directory is
// bound read-write at its own path and lent, and it is granted to the audit as the call's own.
TEST_P(ServiceBridge, EveryPlanStartsTheRelayBeforeTheHelperAndAfterTheShim) {
    auto spec = target_spec({"/bin/true"});
    const auto run_dir = fs::path{spec.home}.parent_path();
    const auto dir = run_dir / "bridge-plan";
    fs::create_directories(dir);
    hand_to_caller(run_dir);
    spec.bridge = {dir.string(), "/usr/libexec/tea-evaluate/tea-bridge-relay"};
    const auto socket = (dir / "bridge.sock").string();
    auto staged = spec;
    staged.staged = true;
    auto audited = spec;
    audited.observed = true;
    auto routed = spec;
    routed.egress = {(run_dir / "egress-plan" / "proxy.sock").string(), 3128,
                     "/usr/libexec/tea-evaluate/tea-egress-shim"};
    for (const auto *asked : {&spec, &staged, &audited, &routed}) {
        const auto r = run_spec(*asked, Backend::bubblewrap, true);
        ASSERT_EQ(r.status, 0) << r;
        const auto plan = nlohmann::json::parse(r.out);
        const auto argv = plan["argv"].get<std::vector<std::string>>();
        const auto at = [&](const std::string &item) {
            return std::find(argv.begin(), argv.end(), item) - argv.begin();
        };
        const auto relay = at("/proc/self/fd/20");
        ASSERT_LT(relay + 3, static_cast<long>(argv.size())) << r.out;
        EXPECT_EQ(argv[static_cast<std::size_t>(relay + 2)], socket) << r.out;
        EXPECT_LT(relay, at("confine")) << r.out;
        EXPECT_FALSE(plan.contains("holder")) << r.out;
        if (asked == &routed) {
            EXPECT_LT(at("/proc/self/fd/13"), relay) << r.out;
        }
        // In bwrap's argument stream (NUL-separated, as the plan's file holds it).
        EXPECT_NE(r.out.find("--bind\\u0000" + dir.string() + "\\u0000" + dir.string() + "\\u0000"),
                  std::string::npos)
            << r.out;
        const auto writable = plan["audit"]["writable"].get<std::vector<std::string>>();
        EXPECT_NE(std::find(writable.begin(), writable.end(), dir.string()), writable.end())
            << r.out;
        if (plan.contains("lend")) {
            const auto lent = plan["lend"]["paths"].get<std::vector<std::string>>();
            EXPECT_NE(std::find(lent.begin(), lent.end(), dir.string()), lent.end()) << r.out;
        }
    }
    // A bridge's directory anywhere but in the call's run directory, or a link there, would hand
    // the target a host directory to write: refused, named.
    auto elsewhere = spec;
    elsewhere.bridge.dir = host_dir().string();
    auto linked = spec;
    linked.bridge.dir = (run_dir / "bridge-link").string();
    fs::create_directory_symlink(host_dir(), linked.bridge.dir);
    for (const auto *refused : {&elsewhere, &linked}) {
        const auto r = run_spec(*refused, Backend::bubblewrap, true);
        EXPECT_EQ(r.status, 12) << r;
        EXPECT_NE(r.err.find("the bridge directory " + refused->bridge.dir), std::string::npos)
            << r;
    }
    const auto grader = [&] {
        auto g = grader_spec({"/bin/true"}, {});
        g.bridge = spec.bridge;
        return run_spec(g, Backend::bubblewrap, true);
    }();
    EXPECT_EQ(grader.status, 12) << grader;
    EXPECT_NE(grader.err.find("takes no bridge"), std::string::npos) << grader;
}

// The relay beside the target is one of the sandbox's processes like the shim: under the target's
// seccomp filter, and not dumpable, so the target can neither write its memory nor gain the
// kernel surface back through it. The target's own child, the control, is writable.
TEST_P(ServiceBridge, TheRelayIsFilteredAndNotWritableByTheTarget) {
    auto spec = target_spec(python(process_survey_probe));
    const auto run_dir = fs::path{spec.home}.parent_path();
    const auto dir = run_dir / "bridge-survey";
    fs::create_directories(dir);
    hand_to_caller(run_dir);
    spec.bridge = {dir.string(), TEA_BRIDGE_RELAY_BIN};
    const auto r = run_spec(spec);
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_TRUE(r.has("CHILD-MEM-OK")) << r;
    int others = 0;
    for (int pid = 1; pid < 64; ++pid) {
        const auto name = "PID" + std::to_string(pid);
        if (const auto seccomp = r.value(name + "-SECCOMP")) {
            ++others;
            EXPECT_EQ(*seccomp, "2") << name << "\n" << r;
            EXPECT_TRUE(r.has(name + "-MEM-DENIED:EACCES")) << name << "\n" << r;
        }
    }
    EXPECT_GE(others, 2) << "the sandbox's init and the relay were seen\n" << r;
}

INSTANTIATE_TEST_SUITE_P(Identities, ServiceBridge,
                         ::testing::Values(Identity::invoker, Identity::unprivileged),
                         identity_name);

}  // namespace
}  // namespace tea::test::bwrap
