// The evaluation folder: evaluation.json, its registry of targets, the probes and the evaluator,
// read into one model and checked as a whole (docs/evaluation-format.md is the format's reference).
//
// Loading never stops at the first problem: every problem found is reported, each with the file,
// the entry or probe, and the field, so `check` can name them all at once. A model that holds any
// problem is never run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "evaluation/conversation_probe.hpp"
#include "evaluation/egress_item.hpp"
#include "evaluation/http_probe.hpp"
#include "evaluation/rubric.hpp"
#include "evaluation/tool_server_probe.hpp"

namespace tea::evaluation {

// One thing wrong with the evaluation. Rendered as "<file>:<line>:<column>: <where>: <message>",
// the line and column only for a JSON syntax error, <where> only when the problem lies in an
// entry, a probe or the evaluator ("entry 'greeter' field 'egress[1].host'").
struct Problem {
    std::filesystem::path file;
    std::size_t line = 0;    // 1-based; 0 when not a syntax error
    std::size_t column = 0;  // 1-based; 0 when not a syntax error
    std::string where;       // the entry, probe or evaluator and the field; may be empty
    std::string message;
    // A path of the host no confinement can carry (the evaluation folder's, TMPDIR), not a fault
    // of what the folder holds: `check` reports it with the rest, `run` refuses it with exit 12.
    bool cannot_confine = false;
};
std::string to_string(const Problem &problem);

// What a call, or a trial's file system, may consume; unset: the configuration's [budgets]
// (docs/configuration.md). An entry's replace the evaluation's for its calls.
struct Budgets {
    std::optional<std::uint64_t> memory_bytes;
    std::optional<std::uint64_t> processes;
    std::optional<std::uint64_t> disk_bytes;  // the evaluation's only: a trial's file system
};

// A registry entry: a "command" run once a probe, a "toolServer" started for each probe and
// spoken to over its stdio (tool_server_probe.hpp), or an "http" service started for each probe
// and sent its request through the bridge (http_probe.hpp).
struct Entry {
    std::string interface_id;  // unique; names the entry in probes and records
    std::string kind = "command";
    std::string executable;  // the name the target is known by (records, progress)
    std::string target;      // the program, relative to the project root (and so the workspace)
    // A toolServer's own arguments after the target (a command's come from its probes).
    std::vector<std::string> args;
    // How a toolServer is spoken to: "stdio" (its stdin and stdout) or "http" (the streamable
    // HTTP endpoint at endpoint_path, on the port it reports as an HTTP entry's service does).
    std::string transport = "stdio";
    std::string endpoint_path = "/mcp";
    // The argument prefixes a probe of this entry may start with; [[]] allows any arguments.
    std::vector<std::vector<std::string>> subcommand_paths;
    // Artifact name -> path relative to the workspace, copied (bounded, links not followed) for
    // the evaluator after the trial's calls.
    std::map<std::string, std::string> artifacts;
    std::vector<std::string> environment_keys;  // host variables the target is given
    std::int64_t max_elapsed_ms = 0;            // > 0: the call's timeout
    std::vector<int> infrastructure_exit_codes;
    std::vector<std::string> system_paths;  // absolute, normalised
    std::vector<EgressItem> egress;
    std::optional<std::string> login;
    Budgets budgets;
};

// One call of a trial: probes/<name>.json.
struct Probe {
    std::string name;  // the file's stem; probes run in name order
    std::filesystem::path file;
    std::string entry;              // an Entry's interface_id
    std::vector<std::string> args;  // after the target
    std::string stdin_text;         // what the call reads on stdin (empty: nothing)
    // Files written into the workspace before the call: workspace-relative path -> content, the
    // corpus files the probe names included (read once, at load).
    std::map<std::string, std::string> files;
    // Workspace-relative path -> the name of a file under corpus/ (evaluation/corpus.hpp).
    std::map<std::string, std::string> corpus;
    // Non-empty: a historical probe, whose call runs in a checkout of this revision
    // (evaluation/historical_probes.hpp).
    std::string revision;
    // A probe of a toolServer entry: its request (args and stdin are then empty).
    std::optional<ToolServerProbe> tool_server;
    // A probe of an http entry: its request (args and stdin are then empty).
    std::optional<HttpProbe> http;
    // A probe of a command entry talked to by the sealed-brief agent: its stdio is the relay's
    // (stdin is then empty).
    std::optional<ConversationProbe> conversation;
};

// An evaluator of kind "rubric": an agent CLI asked to grade the trial's artifacts against
// rubric.md (rubric.hpp, rubric_judge.hpp).
struct RubricJudge {
    std::string rubric_file;  // relative to the evaluation folder, as written
    Rubric rubric;
    std::string agent = "claude";
    std::string program;                 // as written: absolute, or a name on PATH
    std::filesystem::path program_path;  // found when the evaluation was read, absolute
    std::string model;
    std::optional<std::string> login;  // the login adapter whose grant the judge gets
    // The invoker's variables given to the judge (the API's address, a certificate authority).
    std::vector<std::string> environment_keys;
    // The hosts the judge reaches through the egress route, and nothing else; empty: no route,
    // the judge has the host's network as a command evaluator does.
    std::vector<EgressItem> egress;
    // The artifacts shown, as "<entry>/<name>"; empty: every artifact of the trial.
    std::vector<std::string> artifacts;
    int retries = 2;  // further turns after a malformed answer
    std::int64_t max_score = 10;
    std::int64_t pass_threshold_permille = 1000;
};

struct Evaluator {
    std::string kind = "command";  // or "rubric"
    // Kind "command": command[0] is relative to the evaluation folder and lies inside the
    // project; the rest are its arguments.
    std::vector<std::string> command;
    // The command's whole run, or each turn of a rubric judge.
    std::int64_t max_elapsed_ms = 60000;
    std::optional<RubricJudge> rubric;  // kind "rubric"
};

struct Evaluation {
    std::filesystem::path folder;        // the evaluation folder, absolute and canonical
    std::filesystem::path project_root;  // "project" in evaluation.json, default "..", canonical
    bool confinement = true;
    // Plant canary strings in the folder for each run and look for them in what each trial's
    // target could write (evaluation/leak_detectors.hpp).
    bool canaries = false;
    int trials = 1;
    Budgets budgets;
    std::vector<Entry> registry;       // in file order
    std::vector<Probe> probes;         // in name order
    std::filesystem::path probes_dir;  // absolute
    Evaluator evaluator;
    std::vector<std::string> corpus_files;  // the names under corpus/, sorted

    [[nodiscard]] const Entry *entry(const std::string &interface_id) const;
    // The evaluator's program, absolute.
    [[nodiscard]] std::filesystem::path evaluator_program() const;
};

struct Loaded {
    Evaluation evaluation;
    std::vector<Problem> problems;  // empty: the evaluation may run
    // What `check` says without refusing (a corpus file no probe uses).
    std::vector<Problem> notes;
};

// Reads and checks the folder. Never throws for anything the folder holds: a missing file, bad
// JSON, a hostile path are problems. Throws only for a failure of the host (out of memory).
Loaded load(const std::filesystem::path &folder);

}  // namespace tea::evaluation
