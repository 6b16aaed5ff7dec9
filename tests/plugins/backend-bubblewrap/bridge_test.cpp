// The bridge into a started service through a backend's plan (ABI 1.9's launch spec "bridge"):
// the spec prepared by the real backend plugin and its plan run by tea-plan-call as the runtime
// runs it, a python3 http.server as the service writing its port file, and the host's
// ServiceBridge reaching it with curl. Under opt-out, the positive control of the confined cases
// to come: the same relay, unconfined, reached the same way.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tea/documents.hpp>
#include <tea/stream_relay.hpp>
#include <thread>

#include "bridge/port_file.hpp"
#include "bridge/service_bridge.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// curl's HTTP status for GET / on 127.0.0.1:port ("000": no answer).
std::string curl(std::uint16_t port) {
    return tea::test::run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                           "10", "http://127.0.0.1:" + std::to_string(port) + "/"},
                          tea::test::environment_with({}))
        .out;
}

// A launch spec whose target is python3's http.server on 127.0.0.1, writing its port to the file
// TEA_PORT_FILE names, with the bridge's directory `dir`.
tea::documents::LaunchSpec service_spec(const fs::path &dir, const fs::path &workspace) {
    tea::documents::LaunchSpec spec;
    spec.argv = {"python3", "-c",
                 "import http.server, os\n"
                 "s = http.server.HTTPServer(('127.0.0.1', 0), "
                 "http.server.SimpleHTTPRequestHandler)\n"
                 "open(os.environ['TEA_PORT_FILE'], 'w').write(str(s.server_port))\n"
                 "s.serve_forever()\n"};
    for (const char *name : {"PATH", "HOME", "PYENV_ROOT"}) {
        if (const char *value = std::getenv(name)) {
            spec.env.push_back(std::string{name} + "=" + value);
        }
    }
    spec.env.push_back("TEA_PORT_FILE=" + (dir / tea::bridge::kPortFileName).string());
    spec.workspace = spec.cwd = workspace.string();
    spec.runtime_prefix = "/usr";
    spec.helper_dir = "/usr/libexec/tea-evaluate";
    spec.bridge = {dir.string(), TEA_BRIDGE_RELAY};
    return spec;
}

TEST(BridgeOptOut, TheSameRelayUnconfinedIsReachedThroughTheHostsBridge) {
    char pattern[] = "/tmp/tea-bridge-opt-out-XXXXXX";
    const fs::path root = ::mkdtemp(pattern);
    const fs::path dir = root / "bridge";
    const fs::path workspace = root / "workspace";
    fs::create_directories(dir);
    fs::create_directories(workspace);
    tea::bridge::make_port_file(dir);
    const fs::path spec_file = root / "spec.json";
    std::ofstream(spec_file) << tea::documents::encode(service_spec(dir, workspace));
    const pid_t call = ::fork();
    if (call == 0) {
        ::setpgid(0, 0);
        ::execl(TEA_PLAN_CALL_BIN, TEA_PLAN_CALL_BIN, "opt-out", spec_file.c_str(), nullptr);
        ::_exit(127);
    }
    {
        tea::bridge::ServiceBridge bridge({.dir = dir,
                                           .pid = call,
                                           .own_network = false,
                                           .call_ended = -1,
                                           .patience = 20'000ms});
        ASSERT_TRUE(bridge.start()) << *bridge.record().refusal;
        EXPECT_EQ(curl(bridge.host_port()), "200");
        bridge.stop();
        EXPECT_GE(bridge.record().connections, 1U);
    }
    ::kill(-call, SIGTERM);
    int status = 0;
    ::waitpid(call, &status, 0);
    // The relay ended with the call: its socket refuses.
    bool refused = false;
    for (int i = 0; i < 100 && !refused; ++i) {
        const int fd = tea::stream_relay::connect_unix((dir / "bridge.sock").string());
        refused = fd < 0 && errno == ECONNREFUSED;
        if (fd >= 0) {
            ::close(fd);
        }
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_TRUE(refused);
    fs::remove_all(root);
}

}  // namespace
