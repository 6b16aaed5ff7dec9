// The node check of run --executor slurm (docs/scale-out.md): before the array, one small job on
// the array's partition runs this binary with the run's command line as
// `tea-evaluate ... run EVAL_DIR --node-check RUN_ID`, which opens the evaluation with the same
// configuration and plugins as a task would, reads the run's run.json from the shared directory,
// makes one confined call of /bin/true, and writes what it found to the run's
// slurm/node-check.json. The run reads it back: a node that cannot see or write the run's folder,
// or cannot confine, stops the run (exit 12) before any trial is made, naming the node.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.hpp"

namespace tea::cli {

// The node's side: exit 0 when the node can make the run's trials, 12 when it cannot (what failed
// written to node-check.json when the run's folder is writable, and to stderr always).
int node_check_command(const CommonOptions &common, const RunCommandOptions &options);

// The run's side: why the node cannot make the run's trials, from its node-check.json as read
// (`result`, null when there is none, `unread` saying why), the node Slurm ran the check on, and
// the end of the check's stderr; empty when it can.
std::string node_check_failure(const nlohmann::json &result, const std::string &unread,
                               const std::string &node, const std::string &stderr_tail);

}  // namespace tea::cli
