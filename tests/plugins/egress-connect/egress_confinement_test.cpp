// The egress route of a confined call, end to end: the real tea-evaluate, real bwrap, the connect
// plugin's proxy and the shim inside the namespace, against servers on this machine's loopback
// only (a TLS server with a self-signed certificate, a plain-HTTP server).
//
// Each test shows the route doing what it must and, beside it, the same probe showing the other
// side: a refused port next to the allowed one, a plain request with no route next to the same
// request through a tunnel, a direct connect that finds nothing next to the same connect
// unconfined.
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../backend-bubblewrap/harness.hpp"
#include "support/process.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// relay_sockets(): the socket each shim relay visible from inside carries connections to, read
// from the relay's command line (the shim's, run as descriptor 13 by the backend). The shim
// itself stays as the namespace's first process with the same command line: pid 1 is no relay.
constexpr const char *relay_finder = R"PY(
def relay_sockets():
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and pid != "1":
            try:
                with open("/proc/" + pid + "/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv[0] == b"/proc/self/fd/13" and b"--socket" in argv:
                found.append(argv[argv.index(b"--socket") + 1].decode())
    return found
)PY";

// A name no resolver knows (.test is reserved for testing): reached only through a pin.
constexpr const char *made_up_host = "api.tea-evaluate.test";

class Egress : public Confinement {
   protected:
    void SetUp() override {
        Confinement::SetUp();
        if (IsSkipped()) {
            return;
        }
        // Outside the host's temp directories, which a target sees as its call's own: the
        // target's client reads the certificate.
        const auto dir = host_dir() / "tls";
        fs::create_directories(dir);
        fs::permissions(dir, fs::perms{0755});
        cert_ = dir / "cert.pem";
        key_ = dir / "key.pem";
        const auto made = run_direct(
            {"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-subj", "/CN=127.0.0.1", "-addext",
             "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:" + std::string{made_up_host},
             "-keyout", key_.string(), "-out", cert_.string()});
        ASSERT_EQ(made.status, 0) << made;
        fs::permissions(cert_, fs::perms{0644});
    }

    // A server of `kind` ("tls" or "plain"); its port once it listens.
    int serve(const std::string &kind) {
        const auto port_file = base() / ("port-" + std::to_string(servers_.size()));
        std::vector<std::string> argv{"/usr/bin/python3", "-I", TEA_EGRESS_GET_SERVER, kind,
                                      port_file.string()};
        if (kind == "tls") {
            argv.insert(argv.end(), {cert_.string(), key_.string()});
        }
        servers_.emplace_back(argv, base_env(), std::vector<std::pair<int, int>>{}, base());
        int port = 0;
        const bool up = eventually([&] {
            std::ifstream in{port_file};
            return static_cast<bool>(in >> port);
        });
        EXPECT_TRUE(up) << "the " << kind << " server did not start";
        return port;
    }

    static std::string https_url(int port) {
        return "https://127.0.0.1:" + std::to_string(port) + "/";
    }
    static std::string allow(int port) { return "127.0.0.1:" + std::to_string(port); }

    std::vector<std::string> curl(const std::string &url) const {
        return {"/usr/bin/curl", "-sS", "--max-time", "20", "--cacert", cert_.string(), url};
    }

    // exec --json: the record is stdout's last line (the target's output went to stderr).
    static json record(const Result &r) {
        std::istringstream lines{r.out};
        std::string line;
        std::string last;
        while (std::getline(lines, line)) {
            if (!line.empty()) {
                last = line;
            }
        }
        return json::parse(last, nullptr, false);
    }

    // The shim's relays of this test's calls: the shim's command line, which names the socket
    // beneath this test's private root (strace's and bwrap's name it too, further on), in a
    // process whose parent has it too (the shim, which stays as the namespace's init).
    std::vector<pid_t> relays() const {
        const auto is_shim = [](pid_t pid) {
            std::ifstream in{"/proc/" + std::to_string(pid) + "/cmdline"};
            std::string first;
            std::getline(in, first, '\0');
            return first == "/proc/self/fd/13";
        };
        std::vector<pid_t> out;
        for (const pid_t pid : processes_with(private_root().string())) {
            std::ifstream stat{"/proc/" + std::to_string(pid) + "/stat"};
            std::string text{std::istreambuf_iterator<char>{stat}, {}};
            const auto close = text.rfind(')');
            pid_t parent = 0;
            if (close != std::string::npos) {
                std::istringstream fields{text.substr(close + 2)};
                std::string state;
                fields >> state >> parent;
            }
            if (is_shim(pid) && parent > 0 && is_shim(parent)) {
                out.push_back(pid);
            }
        }
        return out;
    }

    void expect_every_route_process_filtered();

    fs::path cert_;
    fs::path key_;
    std::vector<Process> servers_;
};

TEST_F(Egress, CurlReachesAnAllowedHostThroughTheProxy) {
    const int port = serve("tls");
    const auto r = run({.command = curl(https_url(port)), .options = {"--egress", allow(port)}});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(r.out.find("tea-tls-ok"), std::string::npos) << r;
}

TEST_F(Egress, CurlReachesAnAllowedHostWhenAnUnprivilegedUserRunsTheCall) {
    // No identity to drop to: the socket stays the invoker's, in a directory only it may enter.
    become_unprivileged();
    const int port = serve("tls");
    const auto r = run({.command = curl(https_url(port)), .options = {"--egress", allow(port)}});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(r.out.find("tea-tls-ok"), std::string::npos) << r;
    // The control: the same call without the item has no route.
    const auto none = run({.command = curl(https_url(port))});
    EXPECT_NE(none.status, 0) << none;
    EXPECT_EQ(none.out.find("tea-tls-ok"), std::string::npos) << none;
}

TEST_F(Egress, AnotherPortIsRefusedWith403AndRecorded) {
    const int allowed = serve("tls");
    const int other = serve("tls");
    const auto refused =
        run({.command = curl(https_url(other)), .options = {"--json", "--egress", allow(allowed)}});
    EXPECT_NE(refused.status, 0) << refused;
    EXPECT_NE(refused.err.find("403"), std::string::npos) << refused;
    const auto doc = record(refused);
    ASSERT_TRUE(doc.is_object()) << refused;
    ASSERT_EQ(doc["egress"].size(), 1U) << doc;
    EXPECT_EQ(doc["egress"][0]["port"], allowed) << doc;
    ASSERT_EQ(doc["egressRefusals"].size(), 1U) << doc;
    const auto &refusal = doc["egressRefusals"][0];
    EXPECT_EQ(refusal["status"], 403) << doc;
    EXPECT_EQ(refusal["host"], "127.0.0.1") << doc;
    EXPECT_EQ(refusal["port"], other) << doc;
    EXPECT_EQ(refusal["entry"], "curl") << doc;
    EXPECT_EQ(refusal["count"], 1) << doc;
    EXPECT_FALSE(refusal["reason"].get<std::string>().empty()) << doc;
    // The human line names the refusal too.
    EXPECT_NE(refused.err.find("egress: the proxy refused 1 distinct request"), std::string::npos)
        << refused;

    // Positive control: the same request, its port listed, is tunnelled and leaves no refusal.
    const auto control =
        run({.command = curl(https_url(other)), .options = {"--json", "--egress", allow(other)}});
    EXPECT_EQ(control.status, 0) << control;
    EXPECT_NE(control.err.find("tea-tls-ok"), std::string::npos) << control;
    EXPECT_TRUE(record(control)["egressRefusals"].empty()) << control;
}

TEST_F(Egress, PlainHttpWithoutATunnelHasNoRoute) {
    const int port = serve("plain");
    const auto url = "http://127.0.0.1:" + std::to_string(port) + "/";
    // curl takes HTTPS_PROXY for https:// only: a plain request goes direct, and finds nothing.
    const auto direct = run({.command = {"/usr/bin/curl", "-sS", "--max-time", "20", url},
                             .options = {"--egress", allow(port)}});
    EXPECT_NE(direct.status, 0) << direct;
    EXPECT_EQ(direct.out.find("tea-plain-ok"), std::string::npos) << direct;
    // Positive control: the same request through a CONNECT tunnel to the listed host and port.
    const auto tunnelled =
        run({.command = {"/bin/sh", "-c",
                         "exec /usr/bin/curl -sS --max-time 20 -p -x \"$HTTPS_PROXY\" " + url},
             .options = {"--egress", allow(port)}});
    EXPECT_EQ(tunnelled.status, 0) << tunnelled;
    EXPECT_NE(tunnelled.out.find("tea-plain-ok"), std::string::npos) << tunnelled;
}

TEST_F(Egress, PythonUrllibReachesAnAllowedHostThroughTheProxy) {
    const int port = serve("tls");
    // urllib reads https_proxy/HTTPS_PROXY itself and opens the CONNECT tunnel.
    const auto probe = python(R"PY(
import ssl, urllib.request
context = ssl.create_default_context(cafile=sys.argv[2])
report("URLLIB", lambda: urllib.request.urlopen(sys.argv[1], context=context, timeout=20).read().decode().strip())
)PY",
                              {https_url(port), cert_.string()});
    const auto r = run({.command = probe, .options = {"--egress", allow(port)}});
    EXPECT_TRUE(r.has("URLLIB-OK:tea-tls-ok")) << r;
    // The control: the same client without the item finds no route.
    const auto none = run({.command = probe});
    EXPECT_FALSE(none.has("URLLIB-OK")) << none;
}

TEST_F(Egress, ManyConnectionsAndABulkTransferCrossTheRelayIntact) {
    const int port = serve("tls");
    // 32 requests at once, then 32 MiB in one response, each byte checked.
    const auto probe = python(R"PY(
import ssl, threading, urllib.request
context = ssl.create_default_context(cafile=sys.argv[2])
def get(path):
    return urllib.request.urlopen(sys.argv[1] + path, context=context, timeout=60).read()
results = []
def one():
    try:
        results.append(get(""))
    except Exception as e:
        results.append(repr(e).encode())
threads = [threading.Thread(target=one) for _ in range(32)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("PARALLEL:%d" % sum(r == b"tea-tls-ok\n" for r in results), flush=True)
size = 32 * 1024 * 1024
data = get("bytes/%d" % size)
expected = bytes(i % 251 for i in range(251 * 256))
intact = len(data) == size and all(
    data[i:i + len(expected)] == expected[:min(len(expected), size - i)]
    for i in range(0, size, len(expected)))
print("BULK:%d:%s" % (len(data), intact), flush=True)
)PY",
                              {https_url(port), cert_.string()});
    const auto r = run({.command = probe, .options = {"--egress", allow(port)}});
    EXPECT_EQ(r.value("PARALLEL"), "32") << r;
    EXPECT_EQ(r.value("BULK"), "33554432:True") << r;
}

TEST_F(Egress, ARequestThatIsNoConnectGets405AndIsRecorded) {
    const int port = serve("plain");
    const auto url = "http://127.0.0.1:" + std::to_string(port) + "/";
    // Without -p, curl asks the proxy itself for the URL (GET http://...), which it refuses.
    const auto refused =
        run({.command = {"/bin/sh", "-c",
                         "exec /usr/bin/curl -sS -f --max-time 20 -x \"$HTTPS_PROXY\" " + url},
             .options = {"--json", "--egress", allow(port)}});
    EXPECT_NE(refused.status, 0) << refused;
    const auto doc = record(refused);
    ASSERT_TRUE(doc.is_object()) << refused;
    ASSERT_EQ(doc["egressRefusals"].size(), 1U) << doc;
    EXPECT_EQ(doc["egressRefusals"][0]["status"], 405) << doc;
    // The control: the same proxy and URL through a tunnel.
    const auto tunnelled =
        run({.command = {"/bin/sh", "-c",
                         "exec /usr/bin/curl -sS -f --max-time 20 -p -x \"$HTTPS_PROXY\" " + url},
             .options = {"--json", "--egress", allow(port)}});
    EXPECT_EQ(tunnelled.status, 0) << tunnelled;
    EXPECT_TRUE(record(tunnelled)["egressRefusals"].empty()) << tunnelled;
}

TEST_F(Egress, ANameThatResolvesToAnAddressTheItemDoesNotNameIsRefused) {
    const int port = serve("tls");
    const auto url = "https://localhost:" + std::to_string(port) + "/";
    const auto item = "localhost:" + std::to_string(port);
    const auto refused =
        run({.command = curl(url), .options = {"--json", "--egress", item + "=192.0.2.1"}});
    EXPECT_NE(refused.status, 0) << refused;
    const auto doc = record(refused);
    ASSERT_TRUE(doc.is_object()) << refused;
    ASSERT_EQ(doc["egressRefusals"].size(), 1U) << doc;
    EXPECT_EQ(doc["egressRefusals"][0]["status"], 403) << doc;
    EXPECT_EQ(doc["egressRefusals"][0]["host"], "localhost") << doc;
    EXPECT_NE(doc["egressRefusals"][0].value("address", "").find("127.0.0.1"), std::string::npos)
        << doc;
    // The control: the item names the address the name resolves to.
    const auto allowed =
        run({.command = curl(url), .options = {"--egress", item + "=127.0.0.1,::1"}});
    EXPECT_EQ(allowed.status, 0) << allowed;
    EXPECT_NE(allowed.out.find("tea-tls-ok"), std::string::npos) << allowed;
}

TEST_F(Egress, APinnedMadeUpNameReachesTheServerItIsPinnedTo) {
    const int port = serve("tls");
    const auto url = "https://" + std::string{made_up_host} + ":" + std::to_string(port) + "/";
    const auto item = std::string{made_up_host} + ":" + std::to_string(port);
    const auto pinned =
        run({.command = curl(url), .options = {"--json", "--egress", item + "@127.0.0.1"}});
    EXPECT_EQ(pinned.status, 0) << pinned;
    // Under --json the target's output goes to stderr.
    EXPECT_NE(pinned.err.find("tea-tls-ok"), std::string::npos) << pinned;
    const auto doc = record(pinned);
    ASSERT_TRUE(doc.is_object()) << pinned;
    EXPECT_TRUE(doc["egressRefusals"].empty()) << doc;
    ASSERT_EQ(doc["egress"].size(), 1U) << doc;
    EXPECT_EQ(doc["egress"][0], (json{{"host", made_up_host},
                                      {"port", port},
                                      {"addresses", {"127.0.0.1"}},
                                      {"pinned", true}}))
        << doc;
    // The control: the same address as a filter leaves the name to the resolver, which does not
    // know it.
    const auto filtered =
        run({.command = curl(url), .options = {"--json", "--egress", item + "=127.0.0.1"}});
    EXPECT_NE(filtered.status, 0) << filtered;
    EXPECT_EQ(filtered.err.find("tea-tls-ok"), std::string::npos) << filtered;
    const auto refused = record(filtered);
    ASSERT_TRUE(refused.is_object()) << filtered;
    ASSERT_EQ(refused["egressRefusals"].size(), 1U) << refused;
    EXPECT_EQ(refused["egressRefusals"][0]["status"], 502) << refused;
    EXPECT_EQ(refused["egressRefusals"][0]["host"], made_up_host) << refused;
}

TEST_F(Egress, APinOpensItsOwnHostOnly) {
    const int port = serve("tls");
    const auto item = std::string{made_up_host} + ":" + std::to_string(port) + "@127.0.0.1";
    // Another name, and the pinned address itself, on the same port: neither is listed.
    const auto other = "https://other.tea-evaluate.test:" + std::to_string(port) + "/";
    const auto refused = run({.command = {"/bin/sh", "-c",
                                          "\"$0\" -sS --max-time 20 -k \"$1\"; "
                                          "\"$0\" -sS --max-time 20 --cacert \"$2\" \"$3\"",
                                          "/usr/bin/curl", other, cert_.string(), https_url(port)},
                              .options = {"--json", "--egress", item}});
    EXPECT_EQ(refused.err.find("tea-tls-ok"), std::string::npos) << refused;
    const auto doc = record(refused);
    ASSERT_TRUE(doc.is_object()) << refused;
    ASSERT_EQ(doc["egressRefusals"].size(), 2U) << doc;
    for (const auto &r : doc["egressRefusals"]) {
        EXPECT_EQ(r["status"], 403) << doc;
        EXPECT_NE(r["reason"].get<std::string>().find("not listed"), std::string::npos) << doc;
    }
}

TEST_F(Egress, AMalformedPinStopsTheCallBeforeAnythingRuns) {
    const auto marker = workspace() / "ran";
    const std::vector<std::string> touch{"/usr/bin/touch", marker.string()};
    for (const std::string bad :
         {"api.tea-evaluate.test:443@", "api.tea-evaluate.test:443@notanip",
          "api.tea-evaluate.test:443@1.2.3.4,", "api.tea-evaluate.test:443@1.2.3.4=5.6.7.8",
          "127.0.0.1:443@192.0.2.1"}) {
        const auto r = run({.command = touch, .options = {"--egress", bad}});
        EXPECT_EQ(r.status, 2) << bad << "\n" << r;
        EXPECT_NE(r.err.find("--egress " + bad), std::string::npos) << bad << "\n" << r;
        EXPECT_FALSE(fs::exists(marker)) << bad;
    }
    // Positive control: a well-formed pin, and the same command runs.
    const auto ok =
        run({.command = touch, .options = {"--egress", "api.tea-evaluate.test:443@127.0.0.1"}});
    EXPECT_EQ(ok.status, 0) << ok;
    EXPECT_TRUE(fs::exists(marker)) << ok;
}

TEST_F(Egress, ADirectConnectFromInsideFindsNothing) {
    const int port = serve("tls");
    const auto probe = python(R"PY(
report("DIRECT", lambda: socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close())
)PY",
                              {std::to_string(port)});
    // Under opt-out the route is ignored and the target has the host's loopback: the control.
    const auto [confined, control] =
        run_both({.command = probe, .options = {"--egress", allow(port)}});
    EXPECT_TRUE(confined.has("DIRECT-DENIED:ECONNREFUSED")) << confined;
    EXPECT_TRUE(control.has("DIRECT-OK")) << control;
}

TEST_F(Egress, WithoutEgressThereIsNoProxyVariableAndNoShim) {
    const auto probe = python(std::string{relay_finder} + R"PY(
for name in ("HTTPS_PROXY", "https_proxy", "NODE_USE_ENV_PROXY"):
    print(name + "=" + os.environ.get(name, "<unset>"), flush=True)
print("RELAYS:" + str(len(relay_sockets())), flush=True)
)PY");
    // The host's own proxy setting must not reach a target that has no route.
    const auto none = run({.command = probe,
                           .env = {"HTTPS_PROXY=http://host-proxy.invalid:3128",
                                   "https_proxy=http://host-proxy.invalid:3128"}});
    EXPECT_EQ(none.status, 0) << none;
    EXPECT_TRUE(none.has("HTTPS_PROXY=<unset>")) << none;
    EXPECT_TRUE(none.has("https_proxy=<unset>")) << none;
    EXPECT_TRUE(none.has("NODE_USE_ENV_PROXY=<unset>")) << none;
    EXPECT_EQ(none.value("RELAYS"), "0") << none;
    // Positive control: a call with a host gets the variables (the runtime's, not the host's)
    // and the relay runs beside it.
    const auto with = run({.command = probe,
                           .env = {"HTTPS_PROXY=http://host-proxy.invalid:3128"},
                           .options = {"--egress", "example.invalid:443"}});
    EXPECT_EQ(with.status, 0) << with;
    EXPECT_TRUE(with.has("HTTPS_PROXY=http://127.0.0.1:3128")) << with;
    EXPECT_TRUE(with.has("https_proxy=http://127.0.0.1:3128")) << with;
    EXPECT_TRUE(with.has("NODE_USE_ENV_PROXY=1")) << with;
    EXPECT_EQ(with.value("RELAYS"), "1") << with;
}

TEST_F(Egress, TheRelayRunsAsTheSandboxIdentityAndEndsWithTheCall) {
    const auto marker = sleep_marker();
    auto call =
        start({.command = {"/bin/sleep", marker}, .options = {"--egress", "example.invalid:443"}});
    // The relay's command line names the socket, which lies under this test's private root.
    std::vector<pid_t> seen;
    ASSERT_TRUE(eventually([&] {
        seen = relays();
        return !seen.empty() && !processes_running({"/bin/sleep", marker}).empty();
    })) << "the relay was never seen running";
    EXPECT_EQ(seen.size(), 1U);
    for (const pid_t pid : seen) {
        EXPECT_EQ(process_uid(pid), sandbox_uid());
    }
    for (const pid_t pid : processes_running({"/bin/sleep", marker})) {
        ::kill(pid, SIGKILL);
    }
    const auto r = call.wait();
    EXPECT_TRUE(eventually([&] { return relays().empty(); })) << "a relay outlived its call";
    // The socket and its directory went with the run's private directory.
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(private_root(), ec)) {
        EXPECT_EQ(e.path().filename().string().rfind("run-", 0), std::string::npos)
            << e.path() << " was left behind\n"
            << r;
    }
}

// The target looks at every other process of its pid namespace: the shim (its first process)
// and the relay must carry the same seccomp filter, and the relay's memory must not open for
// writing (a target that wrote into a process outside its filter would get the whole kernel
// surface back). Unaudited, so that Seccomp is the confinement's filter alone and no tracer
// stands in the way of the probes.
void Egress::expect_every_route_process_filtered() {
    const auto probe = python(process_survey_probe);
    const auto r = run(
        {.command = probe, .options = {"--observer", "none", "--egress", "example.invalid:443"}});
    EXPECT_EQ(r.status, 0) << r;
    // The shim is the namespace's first process, the relay another; the target's own child is
    // the control: a process of the same identity whose memory does open.
    EXPECT_EQ(r.value("PID1-SECCOMP"), "2") << r;
    EXPECT_TRUE(r.has("PID1-MEM-DENIED:EACCES")) << r;
    EXPECT_EQ(r.value("CHILD-SECCOMP"), "2") << r;
    EXPECT_TRUE(r.has("CHILD-MEM-OK")) << r;
    int others = 0;
    for (int pid = 2; pid < 64; ++pid) {
        const auto name = "PID" + std::to_string(pid);
        if (const auto seccomp = r.value(name + "-SECCOMP")) {
            ++others;
            EXPECT_EQ(*seccomp, "2") << name << "\n" << r;
            EXPECT_TRUE(r.has(name + "-MEM-DENIED:EACCES")) << name << "\n" << r;
        }
    }
    EXPECT_EQ(others, 1) << "the relay, and nothing else" << r;
}

TEST_F(Egress, EveryProcessOfTheRouteRunsUnderTheFilterAndTheRelayIsClosedToTheTarget) {
    expect_every_route_process_filtered();
}

TEST_F(Egress, EveryProcessOfTheRouteRunsUnderTheFilterForAnUnprivilegedInvoker) {
    become_unprivileged();
    expect_every_route_process_filtered();
}

TEST_F(Egress, TheTargetCanReachTheSocketButNotReplaceIt) {
    // The socket's path, from the relay's command line (the target is told only the port).
    const auto probe = python(std::string{relay_finder} + R"PY(
path = relay_sockets()[0]
st = os.stat(path)
print("MODE:%o" % (st.st_mode & 0o777), flush=True)
print("OWNER:%d" % st.st_uid, flush=True)
def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.close()
report("CONNECT", connect)
report("UNLINK", lambda: os.unlink(path))
report("PLANT", lambda: open(os.path.join(os.path.dirname(path), "planted"), "w").close())
report("RENAME", lambda: os.rename(path, path + ".moved"))
)PY");
    const auto r = run({.command = probe, .options = {"--egress", "example.invalid:443"}});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_EQ(r.value("MODE"), "600") << r;
    EXPECT_EQ(r.value("OWNER"), std::to_string(sandbox_uid())) << r;
    EXPECT_TRUE(r.has("CONNECT-OK")) << r;  // the positive control: the route is usable
    EXPECT_TRUE(r.has("UNLINK-DENIED:EROFS")) << r;
    EXPECT_TRUE(r.has("PLANT-DENIED:EROFS")) << r;
    EXPECT_TRUE(r.has("RENAME-DENIED:EROFS")) << r;
}

TEST_F(Egress, AnItemSpelledOtherwiseStopsTheCallBeforeAnythingRuns) {
    const auto marker = workspace() / "ran";
    const std::vector<std::string> touch{"/usr/bin/touch", marker.string()};
    for (const char *bad : {"*.example.com:443", "exa mple.com:443", "example.com",
                            "example.com:70000", "::1:443", "example.com:443=not-an-address"}) {
        const auto r = run({.command = touch, .options = {"--egress", bad}});
        EXPECT_EQ(r.status, 2) << bad << "\n" << r;
        EXPECT_NE(r.err.find("egress"), std::string::npos) << bad << "\n" << r;
        EXPECT_FALSE(fs::exists(marker)) << bad;
    }
    // Positive control: a well-spelled item, and the same command runs.
    const auto ok = run({.command = touch, .options = {"--egress", "api.example.com:443"}});
    EXPECT_EQ(ok.status, 0) << ok;
    EXPECT_TRUE(fs::exists(marker)) << ok;
}

TEST_F(Egress, ASignalEndsTheRouteWithTheCall) {
    const auto marker = sleep_marker();
    auto call =
        start({.command = {"/bin/sleep", marker}, .options = {"--egress", "example.invalid:443"}});
    ASSERT_TRUE(eventually([&] {
        return !relays().empty() && !processes_running({"/bin/sleep", marker}).empty();
    })) << "the relay was never seen running";
    ::kill(call.pid(), SIGTERM);
    const auto r = call.wait();
    EXPECT_EQ(r.status, 128 + SIGTERM) << r;
    EXPECT_TRUE(eventually([&] { return relays().empty(); })) << "a relay outlived its call";
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(private_root(), ec)) {
        EXPECT_EQ(e.path().filename().string().rfind("run-", 0), std::string::npos)
            << e.path() << " (and the socket in it) was left behind\n"
            << r;
    }
}

TEST_F(Egress, AtItsTimeoutTheTargetKeepsItsRouteThroughTheGrace) {
    // The SIGTERM the namespace's init passes to every process of the namespace spares the
    // relay: the target's handler still reaches the allowed host.
    const int port = serve("tls");
    std::string fetch;
    for (const auto &word : curl(https_url(port))) {
        fetch += word + " ";
    }
    const auto r = run(
        {.command = {"/bin/sh", "-c", "trap '" + fetch + "> fetched 2>&1; exit 0' TERM; sleep 60"},
         .timeout_ms = 1000,
         .config = "[call]\nkill_grace_ms = 30000\n",
         .options = {"--egress", allow(port)}});
    EXPECT_EQ(r.status, 124) << r;
    EXPECT_LT(r.elapsed, std::chrono::seconds{20}) << r;
    EXPECT_NE(read_file((workspace() / "fetched").string()).find("tea-tls-ok"), std::string::npos)
        << r;
}

TEST_F(Egress, NodeFetchReachesAnAllowedHostThroughTheProxy) {
    // The Node scripts/install-deps.sh installs: a missing or older one fails, never skips.
    const auto version = run_direct({TEA_TEST_NODE, "-p",
                                     "const [a, b] = process.versions.node.split('.').map(Number);"
                                     " a >= 24 || (a === 22 && b >= 21) ? 'yes' : 'no'"});
    ASSERT_NE(version.out.find("yes"), std::string::npos)
        << TEA_TEST_NODE << " does not read NODE_USE_ENV_PROXY (it needs 22.21 or 24; "
        << "scripts/install-deps.sh installs one)\n"
        << version;
    const int port = serve("tls");
    const auto script = "fetch('" + https_url(port) +
                        "').then(r => r.text()).then(t => { process.stdout.write(t); })"
                        ".catch(e => { console.error(e); process.exit(1); })";
    // An empty environment plus the route's variables and the test's certificate.
    const auto r =
        run({.command = {"/bin/sh", "-c",
                         "exec /usr/bin/env -i HTTPS_PROXY=\"$HTTPS_PROXY\" "
                         "NODE_USE_ENV_PROXY=\"$NODE_USE_ENV_PROXY\" NODE_EXTRA_CA_CERTS=" +
                             cert_.string() + " " + TEA_TEST_NODE + " -e \"" + script + "\""},
             .options = {"--egress", allow(port)}});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(r.out.find("tea-tls-ok"), std::string::npos) << r;
}

}  // namespace
}  // namespace tea::test::bwrap
