// An agent CLI run by the evaluation layer (a rubric judge, the user of a sealed brief): one
// non-interactive turn at a time, through the call session's grader view (outside every target's
// confinement, unaudited, with the paths the caller names read-only), with no tools, a pinned
// model and system prompt, the prompt on stdin, a timeout, and a later turn continuing an earlier
// one by its session id. Every prompt and answer is recorded, redacted with the run's logins.
//
// The agent has a home, a working directory and a temporary directory of its own in the run's
// private directory, kept across its turns (the CLI keeps its sessions in the home, under the
// working directory's name) and removed with it. Its environment is built here, never the
// invoker's: a few variables of the system, the login grant's, and those the caller passes.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "call/logins.hpp"
#include "call/session.hpp"
#include "evaluation/egress_item.hpp"
#include "files/private_dirs.hpp"

namespace tea::evaluation {

// The largest prompt a turn sends, and the most of an answer (the CLI's JSON) a record keeps.
inline constexpr std::uint64_t kAgentPromptCap = std::uint64_t{4} << 20U;  // 4 MiB
inline constexpr std::uint64_t kAgentAnswerCap = std::uint64_t{1} << 20U;  // 1 MiB

// Which agent CLI runs and how. Only "claude" (Claude Code) is known today.
struct AgentSetup {
    std::string agent = "claude";
    std::filesystem::path program;  // the CLI's executable, absolute
    std::string model;              // passed as --model on every turn
    // The Logins entry whose grant the CLI gets (its variables, its files written into the
    // agent's home), a grant asked for this agent alone; "" for none. `login_adapter`: the
    // adapter that granted it, for the records.
    std::string login_entry;
    std::string login_adapter;
    // "NAME=VALUE" given to every turn after the agent's own variables (the API's address, a
    // certificate authority, a proxy).
    std::vector<std::string> environment;
    // Shown read-only to the agent (the evaluation folder, the project's git directory).
    std::vector<std::filesystem::path> read_only;
    // The hosts the agent reaches through an egress route of its own, and nothing else; empty:
    // no route, the host's network. `egress_name` names the agent in the route's refusals.
    std::vector<egress::Item> egress;
    std::string egress_name;
};

// The evaluation's egress list as the route takes it.
std::vector<egress::Item> route_items(const std::vector<EgressItem> &items);

struct AgentTurnRequest {
    std::string system_prompt;
    std::string prompt;                 // sent on stdin
    std::optional<std::string> resume;  // the session id of the turn this one continues
    std::chrono::milliseconds timeout{120000};
    // Where the turn's records go: <record_dir>/<record_name>-prompt.txt, -answer.json (the CLI's
    // stdout) and -stderr.txt. record_dir must exist.
    std::filesystem::path record_dir;
    std::string record_name;
};

struct AgentTurn {
    bool answered = false;   // the CLI exited 0 with a successful result
    std::string text;        // the answer's text (redacted)
    std::string session_id;  // for a later turn's resume
    std::string error;       // why it did not answer, when it did not
    int exit_code = -1;
    int signal = 0;
    bool timed_out = false;
    int interrupted_by = 0;  // a signal to the runtime ended the wait: the run stops
    std::chrono::milliseconds elapsed{0};
    std::string confinement;  // the grader plan's ("opt-out": nothing protected the paths)
    // The connections the route refused (the egress plugin's records), or an empty array, and
    // how many more it refused than it listed.
    nlohmann::json egress_refusals = nlohmann::json::array();
    std::int64_t egress_refusals_omitted = 0;
    std::filesystem::path prompt_file;  // as written (absolute)
    std::filesystem::path answer_file;
    std::filesystem::path stderr_file;
};

// The fields every record of a turn holds: its prompt, answer and stderr files (as `relative`
// names them), exitCode, timedOut, elapsedMs, egressRefusals and egressRefusalsOmitted.
nlohmann::json turn_record_fields(
    const AgentTurn &turn,
    const std::function<std::string(const std::filesystem::path &)> &relative);

// What the CLI's `-p --output-format json` printed, read: answered, text, session_id, error.
AgentTurn read_agent_answer(const std::string &output);

// The CLI's arguments for one turn (argv[0] included).
std::vector<std::string> agent_turn_arguments(const AgentSetup &setup,
                                              const AgentTurnRequest &request);

class EvaluationAgent {
   public:
    // Makes the agent's directories in `private_dir`; nothing runs yet.
    EvaluationAgent(call::CallSession &session, call::Logins &logins,
                    files::RunDirectory &private_dir, AgentSetup setup);
    EvaluationAgent(const EvaluationAgent &) = delete;
    EvaluationAgent &operator=(const EvaluationAgent &) = delete;
    EvaluationAgent(EvaluationAgent &&) = delete;
    EvaluationAgent &operator=(EvaluationAgent &&) = delete;
    ~EvaluationAgent();  // removes the agent's directories

    // Runs one turn and waits for it (at most request.timeout, then its processes are ended).
    // Throws tea::Error only for what the runtime could not do (a record it could not write).
    AgentTurn ask(const AgentTurnRequest &request);

    // What run.json and a verdict say of the agent: {agent, program, model, login (the
    // adapter), loginGrant (the name run.json's logins record its grant under), egress (the
    // hosts listed, or null: the host's network, egress listed or not, when a backend that
    // confines nothing dropped the route)}.
    [[nodiscard]] nlohmann::json record() const;

   private:
    std::vector<std::string> environment();

    call::CallSession &session_;
    call::Logins &logins_;
    AgentSetup setup_;
    std::filesystem::path root_;  // home/, work/ and tmp/ below
    bool route_dropped_ = false;  // a turn ran without the route its egress asked for
};

}  // namespace tea::evaluation
