// tea-plan-call: prepares one launch spec with a backend of the build and runs the plan the way
// the runtime's session does (the lend honoured in the call's mount namespace, the call runner
// starting it), for the tests of what the command line cannot ask for yet: a grader's view, a
// workspace under the private root.
//
//   tea-plan-call [--plan-only] [--staged CUT] BACKEND SPEC_FILE
//   tea-plan-call --session BACKEND OBSERVER SPEC_FILE [CONFIG_FILE]
//
// --session makes the call through the runtime's own CallSession instead (the private root of
// TEA_EVALUATE_PRIVATE_ROOT, the observer confirmed and wrapped around the plan, the audit judged
// with the call's grants) and prints the judged audit on stderr as one line "AUDIT:<json>"; the
// status is the call's. For a launch spec the command line cannot fill yet (loginFiles).
// With TEA_TEST_BRIDGE_CLIENT set (a shell command), the call is a started service's: the session
// makes the bridge, a ServiceBridge is driven on it from this process (the plan's ancestor, as
// the runtime is), and once it is open the command runs with BRIDGE_PORT set to the host port. It
// prints "BRIDGE-CLIENT:<the command's output>", or "BRIDGE-REFUSED:<why>", and
// "BRIDGE-DIR:<the bridge's directory>", then makes the file TEA_TEST_BRIDGE_STOP names so the
// service can end.
//
// The plan's output is the process's own; its status is the exit status. --plan-only prints the
// plan instead of running it. --staged runs it as the session runs an unaudited call (ABI 1.5):
// the backend's staged answer started first, then the complete plan asked for and its deferred
// files written; with a CUT of 0 or more only that many bytes of each are written, as a runtime
// killed while writing them would leave them (-1: all of them). With --plan-only it prints the
// staged answer. A refusal prints "tea-plan-call: <why>" and exits 12.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "audit/observation.hpp"
#include "bridge/service_bridge.hpp"
#include "call/session.hpp"
#include "config/config.hpp"
#include "exec/call_runner.hpp"
#include "exec/exec_plan.hpp"
#include "exec/lending.hpp"
#include "files/private_dirs.hpp"
#include "plugins/loader.hpp"
#include "support/process.hpp"
#include "util/runtime_paths.hpp"

namespace {

namespace fs = std::filesystem;

int run(bool plan_only, std::optional<long> staged_cut, const std::string &backend,
        const std::string &spec_file) {
    // The spec goes to the backend as written, so that a test can show what the backend
    // itself refuses.
    const auto spec_json = tea::test::read_file(spec_file);
    std::string staged_json;
    if (staged_cut) {
        auto spec = tea::exec::launch_spec_from_json(spec_json);
        spec.staged = true;
        staged_json = tea::exec::to_json(spec);
    }
    const auto paths =
        tea::RuntimePaths::for_prefix(fs::path{TEA_EVALUATE_BIN}.parent_path().parent_path());
    const auto registry =
        tea::plugins::Registry::discover({paths.manifest_dir}, paths.plugin_libdir);
    const auto &plugin = registry.require(backend, tea::plugins::Kind::backend);
    const auto instance = plugin.create("{}");
    const auto &ops = std::get<tea_backend_ops>(plugin.ops());
    const auto staged_plan_json =
        staged_cut ? instance->transform(ops.prepare, "prepare", staged_json) : std::string{};
    if (plan_only) {
        std::cout << (staged_cut ? staged_plan_json
                                 : instance->transform(ops.prepare, "prepare", spec_json))
                  << '\n';
        return 0;
    }
    tea::exec::RunOptions options;
    options.timeout = std::chrono::seconds{60};
    options.out.tee_fd = STDOUT_FILENO;
    options.err.tee_fd = STDERR_FILENO;
    // The plan's lend, honoured before its first process starts (it enters the namespace).
    std::optional<tea::exec::Lending> lending;
    const auto lend = [&](const tea::exec::ExecPlan &plan) {
        if (!plan.lend.requested || lending) {
            return;
        }
        const auto spec = tea::exec::launch_spec_from_json(spec_json);
        lending.emplace(tea::exec::Lending::Request::of(plan.lend, spec.withhold));
        options.mount_namespace = lending->mount_namespace();
    };
    // Started before the complete plan exists, as the session starts it.
    std::optional<tea::exec::StartedCall> started;
    std::vector<int> deferred;
    if (staged_cut) {
        const auto staged = tea::exec::exec_plan_from_json(staged_plan_json);
        for (const auto &f : staged.files) {
            if (f.deferred) {
                deferred.push_back(f.child_fd);
            }
        }
        lend(staged);
        started.emplace(staged, options);
    }
    auto plan =
        tea::exec::exec_plan_from_json(instance->transform(ops.prepare, "prepare", spec_json));
    lend(plan);
    if (staged_cut && *staged_cut >= 0) {
        for (auto &f : plan.files) {
            if (std::find(deferred.begin(), deferred.end(), f.child_fd) != deferred.end() &&
                f.content.size() > static_cast<std::size_t>(*staged_cut)) {
                f.content.resize(static_cast<std::size_t>(*staged_cut));
            }
        }
    }
    const auto result = started ? started->finish(plan) : tea::exec::run_call(plan, options);
    lending.reset();
    if (!result.started) {
        std::cerr << "tea-plan-call: the plan did not start: " << result.start_error << '\n';
        return 127;
    }
    return result.status();
}

// TEA_TEST_BRIDGE_PATIENCE_MS, or 20 s.
std::chrono::milliseconds patience() {
    const char *ms = std::getenv("TEA_TEST_BRIDGE_PATIENCE_MS");
    return std::chrono::milliseconds{ms != nullptr ? std::atol(ms) : 20'000};
}

int run_session(const std::string &backend, const std::string &observer,
                const std::string &spec_file, const std::string &config_file) {
    tea::config::Sources sources;
    sources.read_user_file = false;
    if (!config_file.empty()) {
        sources.explicit_file = config_file;
    }
    sources.backend_flag = backend;
    sources.observer_flag = observer;
    auto paths =
        tea::RuntimePaths::for_prefix(fs::path{TEA_EVALUATE_BIN}.parent_path().parent_path());
    auto registry = tea::plugins::Registry::discover({paths.manifest_dir}, paths.plugin_libdir);
    tea::call::CallSession session{
        tea::call::Runtime{tea::config::load(sources), std::move(paths), std::move(registry)},
        tea::files::default_private_root()};
    tea::exec::RunOptions options;
    options.timeout = std::chrono::seconds{60};
    options.out.tee_fd = STDOUT_FILENO;
    options.err.tee_fd = STDERR_FILENO;
    tea::call::ServiceBridgeRequest request;
    std::thread host;
    if (const char *client = std::getenv("TEA_TEST_BRIDGE_CLIENT")) {
        request.wanted = true;
        request.dir_made = [&host, client, backend](const fs::path &dir) {
            host = std::thread([dir, client, backend] {
                tea::bridge::ServiceBridge bridge({.dir = dir,
                                                   .pid = ::getpid(),
                                                   .own_network = backend != "opt-out",
                                                   .call_ended = -1,
                                                   .patience = patience()});
                std::string line = "BRIDGE-DIR:" + dir.string() + "\n";
                if (bridge.start()) {
                    line +=
                        "BRIDGE-CLIENT:" +
                        tea::test::run({"/bin/sh", "-c", client},
                                       tea::test::environment_with(
                                           {"BRIDGE_PORT=" + std::to_string(bridge.host_port())}))
                            .out +
                        "\n";
                } else {
                    line += "BRIDGE-REFUSED:" + bridge.record().refusal.value_or("") + "\n";
                }
                std::cout << line << std::flush;
                if (const char *stop = std::getenv("TEA_TEST_BRIDGE_STOP")) {
                    std::ofstream{stop} << "stop";
                }
            });
        };
    }
    // Joined whatever ends the call: its patience bounds it.
    struct Joined {
        std::thread &thread;
        ~Joined() {
            if (thread.joinable()) {
                thread.join();
            }
        }
    } const joined{host};
    const auto outcome =
        session.call(tea::exec::launch_spec_from_json(tea::test::read_file(spec_file)), options, {},
                     {}, request);
    std::cerr << "AUDIT:" << tea::audit::to_json(outcome.audit).dump() << '\n';
    return outcome.status;
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if ((args.size() == 4 || args.size() == 5) && args[0] == "--session") {
        try {
            return run_session(args[1], args[2], args[3], args.size() == 5 ? args[4] : "");
        } catch (const std::exception &e) {
            std::cerr << "tea-plan-call: " << e.what() << '\n';
            return 12;
        }
    }
    const bool plan_only = !args.empty() && args[0] == "--plan-only";
    if (plan_only) {
        args.erase(args.begin());
    }
    std::optional<long> staged_cut;
    if (args.size() > 1 && args[0] == "--staged") {
        char *end = nullptr;
        staged_cut = std::strtol(args[1].c_str(), &end, 10);
        if (args[1].empty() || *end != '\0') {
            std::cerr << "tea-plan-call: --staged: expected a number of bytes, -1 for all\n";
            return 2;
        }
        args.erase(args.begin(), args.begin() + 2);
    }
    if (args.size() != 2) {
        std::cerr << "usage: tea-plan-call [--plan-only] [--staged CUT] BACKEND SPEC_FILE\n"
                     "       tea-plan-call --session BACKEND OBSERVER SPEC_FILE [CONFIG_FILE]\n";
        return 2;
    }
    try {
        return run(plan_only, staged_cut, args[0], args[1]);
    } catch (const std::exception &e) {
        std::cerr << "tea-plan-call: " << e.what() << '\n';
        return 12;
    }
}
