// tea-plan-call: prepares one launch spec with a backend of the build and runs the plan the way
// the runtime's session does (the lend honoured, the call runner starting it), for the tests of
// what the command line cannot ask for yet: a grader's view, a workspace under the private root.
//
//   tea-plan-call [--plan-only] BACKEND SPEC_FILE
//
// The plan's output is the process's own; its status is the exit status. --plan-only prints the
// plan instead of running it. A refusal prints "tea-plan-call: <why>" and exits 12.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "exec/call_runner.hpp"
#include "exec/exec_plan.hpp"
#include "exec/ownership.hpp"
#include "plugins/loader.hpp"
#include "support/process.hpp"
#include "util/runtime_paths.hpp"

namespace {

namespace fs = std::filesystem;

int run(bool plan_only, const std::string &backend, const std::string &spec_file) {
    // The spec goes to the backend as written, so that a test can show what the backend
    // itself refuses.
    const auto spec_json = tea::test::read_file(spec_file);
    const auto paths =
        tea::RuntimePaths::for_prefix(fs::path{TEA_EVALUATE_BIN}.parent_path().parent_path());
    const auto registry =
        tea::plugins::Registry::discover({paths.manifest_dir}, paths.plugin_libdir);
    const auto &plugin = registry.require(backend, tea::plugins::Kind::backend);
    const auto instance = plugin.create("{}");
    const auto &ops = std::get<tea_backend_ops>(plugin.ops());
    const auto plan_json = instance->transform(ops.prepare, "prepare", spec_json);
    if (plan_only) {
        std::cout << plan_json << '\n';
        return 0;
    }
    const auto plan = tea::exec::exec_plan_from_json(plan_json);
    tea::exec::OwnershipLoan loan;
    if (plan.lend.requested) {
        const auto spec = tea::exec::launch_spec_from_json(spec_json);
        std::vector<fs::path> trees(plan.lend.paths.begin(), plan.lend.paths.end());
        std::sort(trees.begin(), trees.end());
        trees.erase(std::unique(trees.begin(), trees.end()), trees.end());
        loan = tea::exec::OwnershipLoan{
            trees, plan.lend.uid, plan.lend.gid,
            std::vector<fs::path>(spec.withhold.begin(), spec.withhold.end())};
    }
    tea::exec::RunOptions options;
    options.timeout = std::chrono::seconds{60};
    options.out.tee_fd = STDOUT_FILENO;
    options.err.tee_fd = STDERR_FILENO;
    const auto result = tea::exec::run_call(plan, options);
    loan.restore();
    if (!result.started) {
        std::cerr << "tea-plan-call: the plan did not start: " << result.start_error << '\n';
        return 127;
    }
    return result.status();
}

}  // namespace

int main(int argc, char **argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    const bool plan_only = !args.empty() && args[0] == "--plan-only";
    const auto rest = plan_only ? 1U : 0U;
    if (args.size() != rest + 2) {
        std::cerr << "usage: tea-plan-call [--plan-only] BACKEND SPEC_FILE\n";
        return 2;
    }
    try {
        return run(plan_only, args[rest], args[rest + 1]);
    } catch (const std::exception &e) {
        std::cerr << "tea-plan-call: " << e.what() << '\n';
        return 12;
    }
}
