// What a command asks of a call, turned into the call's launch spec and runner options: the
// workspace, the withheld and declared paths, the environment, the route out and the timeout.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "call/runtime.hpp"
#include "egress/egress.hpp"
#include "exec/call_runner.hpp"
#include "exec/exec_plan.hpp"

namespace tea::call {

// What exec and preflight take from the command line about the call.
struct CallOptions {
    std::optional<std::filesystem::path> workspace;  // default: the current directory
    std::vector<std::string> withhold;
    std::vector<std::string> system_paths;  // --system-path: declared read grants
    std::optional<std::int64_t> timeout_ms;
    bool clean_env = false;
    std::vector<std::string> env;     // NAME=VALUE or NAME (the host's value)
    std::vector<std::string> egress;  // --egress HOST:PORT[=ADDR,...]
    std::vector<std::string> command;
    // Handed to the runner as it is (exec::RunOptions::conversation).
    std::optional<exec::Conversation> conversation;
};

// The hosts a call may reach through the egress plugin's route; none: no route at all.
struct EgressRequest {
    std::string entry;  // the name refusals give (the registry entry; for exec, the command)
    std::vector<egress::Item> items;
};

// The call's launch spec; the workspace defaults to the current directory. Exit 2 for a
// workspace that is no directory or an option that is not absolute once resolved.
exec::LaunchSpec launch_spec(const CallOptions &options, const RuntimePaths &paths);

// The --egress items of the options (exit 2 for a malformed one).
EgressRequest egress_request(const CallOptions &options);

// The runner's options for a call: the timeout asked for, the configured grace and output caps,
// and the runtime's signal descriptor. Output is kept, not copied anywhere.
exec::RunOptions run_options(const CallOptions &options, const config::Config &config);

// The runtime's own files, which every later command runs or loads: its installation (the prefix,
// its programs and directories) and every directory it searches for plugin manifests, each with
// what it is.
struct OwnPath {
    std::filesystem::path path;
    const char *what;
    // Whether a workspace inside it is refused too: not for a prefix such as /usr, which holds
    // far more than the runtime.
    bool inside_refused = true;
};
std::vector<OwnPath> runtime_own_paths(const Runtime &runtime);

// Refuses writable directories that would open the runtime itself or the host to the target: a
// workspace or withheld path over the private root, a withheld path with nothing behind it, a
// workspace that holds or lies in one of the runtime's own files (`own`). Exit 12.
void check_call_paths(const exec::LaunchSpec &spec, const std::filesystem::path &private_root,
                      const std::vector<OwnPath> &own);

}  // namespace tea::call
