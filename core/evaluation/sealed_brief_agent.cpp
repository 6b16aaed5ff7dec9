#include "evaluation/sealed_brief_agent.hpp"

#include <utility>

#include "exec/environment.hpp"

namespace tea::evaluation {

using nlohmann::json;

std::string sealed_brief_login_grant(const std::string &probe_name) {
    return "sealed brief " + probe_name;
}

std::string sealed_brief_system_prompt(const std::string &brief) {
    return "You play the person described in the brief below, talking to an assistant. The "
           "assistant has never seen the brief: act on it, never quote it. Each prompt you get "
           "is the assistant's latest reply. Answer with your next message to the assistant and "
           "nothing else. When your goal is met, or the conversation cannot go on, write " +
           std::string{kConversationDoneMarker} + " and nothing more.\n\nBrief:\n" + brief;
}

namespace {

// "NAME=VALUE" for each of `keys` the invoker's environment holds.
std::vector<std::string> invoker_variables(const std::vector<std::string> &keys) {
    const auto invoker = exec::current_environment();
    std::vector<std::string> out;
    for (const auto &key : keys) {
        if (const auto *item = exec::find_variable(invoker, key, nullptr)) out.push_back(*item);
    }
    return out;
}

AgentSetup agent_setup(const ConversationProbe &probe, const std::string &probe_name,
                       std::vector<std::filesystem::path> read_only) {
    // Its grant and its route are its own (trials.cpp asks the grant): a target's login and
    // egress are the target's alone.
    const auto name = sealed_brief_login_grant(probe_name);
    return {probe.agent.agent,
            probe.agent.program,
            probe.agent.model,
            probe.agent.login ? name : std::string{},
            probe.agent.login.value_or(""),
            invoker_variables(probe.agent.environment_keys),
            std::move(read_only),
            route_items(probe.agent.egress),
            name};
}

}  // namespace

SealedBriefAgent::SealedBriefAgent(call::CallSession &session, call::Logins &logins,
                                   files::RunDirectory &private_dir, const ConversationProbe &probe,
                                   std::filesystem::path record_dir, const std::string &probe_name,
                                   std::vector<std::filesystem::path> read_only)
    : system_prompt_{sealed_brief_system_prompt(probe.brief)},
      record_dir_{std::move(record_dir)},
      record_stem_{probe_name},
      agent_{session, logins, private_dir, agent_setup(probe, probe_name, std::move(read_only))} {}

AgentMessage SealedBriefAgent::next(const std::optional<std::string> &target_reply,
                                    std::chrono::milliseconds timeout) {
    AgentTurnRequest request;
    request.system_prompt = system_prompt_;
    request.prompt = target_reply ? "The assistant replied:\n\n" + *target_reply
                                  : std::string{"Write your first message to the assistant."};
    request.resume = session_id_;
    request.timeout = timeout;
    request.record_dir = record_dir_;
    request.record_name = record_stem_ + "-agent-" + std::to_string(turns_.size() + 1);
    const auto turn = agent_.ask(request);
    interrupted_by_ = turn.interrupted_by;
    const auto relative = [&](const std::filesystem::path &file) {
        return "relay/" + file.filename().string();
    };
    auto record = turn_record_fields(turn, relative);
    record["answered"] = turn.answered;
    turns_.push_back(std::move(record));
    if (!turn.answered) return {false, {}, turn.error};
    // A turn without a session id cannot be continued; the next one starts afresh and says so.
    if (!turn.session_id.empty()) session_id_ = turn.session_id;
    return {true, turn.text, {}};
}

json SealedBriefAgent::record() const {
    auto out = agent_.record();
    out["turns"] = turns_;
    return out;
}

}  // namespace tea::evaluation
