// A probe of a command entry that holds a conversation (docs/agent-evaluations.md, "Sealed
// briefs"): the target is talked to, one JSON line each way on its stdio, by the sealed-brief
// agent, an evaluation-layer agent given a brief the target never sees. Read here from the
// probe's "conversation" field; the brief is read once, at load, from the evaluation folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evaluation/egress_item.hpp"
#include "evaluation/probe_fields.hpp"

namespace tea::evaluation {

// A brief is a page of instructions for the agent, not a corpus: anything larger is a mistake.
inline constexpr std::size_t kMaxBriefBytes = std::size_t{64} << 10U;
inline constexpr int kMaxConversationTurns = 64;
inline constexpr int kDefaultConversationTurns = 8;
inline constexpr std::int64_t kDefaultTurnTimeoutMs = 30000;

// The agent CLI that plays the brief's part (evaluation_agent.hpp runs it).
struct ConversationAgent {
    std::string agent = "claude";  // the only one known today
    std::string program;           // the CLI's executable on the host, absolute
    std::string model;             // pinned: passed on every turn
    // The login adapter whose grant the agent gets, as a rubric judge's `login` names one: the
    // grant is the agent's own (sealed_brief_agent.hpp names it), never a target's.
    std::optional<std::string> login;
    // The invoker's variables given to the agent (the model API's address, a proxy, a CA), as
    // the rubric judge's environmentKeys are; nothing else of the invoker's reaches it.
    std::vector<std::string> environment_keys;
    // The hosts the agent reaches through the egress route, as a rubric judge's egress lists
    // them; read with the evaluation's other egress lists (evaluation.cpp), not here.
    std::vector<EgressItem> egress;
};

struct ConversationProbe {
    std::string brief_path;  // as written, relative to the evaluation folder
    std::string brief;       // its content, read at load
    // The agent's messages, each answered by the target, the agent's closing one included.
    int max_turns = kDefaultConversationTurns;
    // How long the target may take to answer one message, and the agent to write one.
    std::int64_t turn_timeout_ms = kDefaultTurnTimeoutMs;
    ConversationAgent agent;
};

// "conversation": {"brief", "maxTurns", "turnTimeoutMs", "agent"}, the brief read from beneath
// `folder` (the evaluation folder, canonical). Every problem goes to `report` with its field
// ("conversation.brief"); the probe is returned only when there is none. `max_elapsed_ms` is
// the entry's (0: not known), which bounds turnTimeoutMs. Whether agent.login's adapter is
// installed is the command's question, as for an entry's login (check and run ask the plugins).
std::optional<ConversationProbe> read_conversation_probe(const nlohmann::json &v,
                                                         const std::filesystem::path &folder,
                                                         std::int64_t max_elapsed_ms,
                                                         const ProbeProblem &report);

}  // namespace tea::evaluation
