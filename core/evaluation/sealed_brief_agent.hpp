// The sealed-brief agent (docs/agent-evaluations.md, "Sealed briefs"): an agent CLI of the
// evaluation layer (evaluation_agent.hpp) that plays the part a brief describes, the user a
// target must serve, in a conversation the relay (brief_relay.hpp) holds with the target. The
// brief is in its system prompt; each of the target's replies is its next prompt, in one session
// resumed from turn to turn. It runs outside the target's confinement with the evaluation folder
// read-only; the target sees only the messages it writes.
#pragma once

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evaluation/brief_relay.hpp"
#include "evaluation/conversation_probe.hpp"
#include "evaluation/evaluation_agent.hpp"

namespace tea::evaluation {

// The name the agent's own login grant is asked and recorded under, one a probe: "sealed brief
// <probe>". No registry entry can have it (an interface id holds no space), so a target's grant
// is never the agent's, nor the agent's a target's.
std::string sealed_brief_login_grant(const std::string &probe_name);

// The system prompt the agent is given: how to play its part, the done marker, then the brief.
std::string sealed_brief_system_prompt(const std::string &brief);

class SealedBriefAgent {
   public:
    // `probe_name`: the probe's, which names the agent's login grant (sealed_brief_login_grant)
    // and its turns' records in `record_dir` (<probe>-agent-<n>-prompt.txt, -answer.json,
    // -stderr.txt); `read_only`: what the agent may read (the evaluation folder).
    SealedBriefAgent(call::CallSession &session, call::Logins &logins,
                     files::RunDirectory &private_dir, const ConversationProbe &probe,
                     std::filesystem::path record_dir, const std::string &probe_name,
                     std::vector<std::filesystem::path> read_only);

    // The relay's AgentVoice: the opening when `target_reply` is none, else the answer to it.
    AgentMessage next(const std::optional<std::string> &target_reply,
                      std::chrono::milliseconds timeout);

    // The call record's relay.agent: the CLI, its model and login, and each turn's files
    // (relative to the trial's records: relay/...).
    [[nodiscard]] nlohmann::json record() const;
    // A signal to the runtime ended an agent's turn: the run stops.
    [[nodiscard]] int interrupted_by() const { return interrupted_by_; }

   private:
    std::string system_prompt_;
    std::filesystem::path record_dir_;
    std::string record_stem_;
    EvaluationAgent agent_;
    std::optional<std::string> session_id_;
    nlohmann::json turns_ = nlohmann::json::array();
    int interrupted_by_ = 0;
};

}  // namespace tea::evaluation
