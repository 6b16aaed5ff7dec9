// The relay between the sealed-brief agent and a target (docs/agent-evaluations.md, "Sealed
// briefs"): the runtime holds the target's stdio for the whole call and carries the agent's
// messages to it, one JSON line each way, until the agent says it is done, the turns run out or
// the target fails the protocol. The agent is a callback (an evaluation-layer process behind
// it), so the relay never sees the brief, and the target only ever sees the agent's messages.
//
// Protocol, one UTF-8 JSON object a line:
//   runtime -> target: {"role": "user", "text": "..."}
//   target -> runtime: {"role": "assistant", "text": "..."}
// The agent speaks first. A message of the agent's that holds kConversationDoneMarker ends the
// conversation and is recorded, not sent. Once the relay returns, the target's stdin is closed
// and the call (the target and everything it started) is ended by the runtime.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evaluation/conversation_probe.hpp"
#include "exec/call_runner.hpp"

namespace tea::evaluation {

inline constexpr std::string_view kConversationDoneMarker = "[[done]]";
// A target's line over this is refused as it arrives (never held whole) and ends the
// conversation: a reply is a chat message, and a target must not hold the runtime's memory.
inline constexpr std::size_t kRelayMaxLineBytes = std::size_t{1} << 20U;
// Each turn's text kept in the call record, cut on a character boundary (the transcript keeps it
// whole).
inline constexpr std::size_t kRelayRecordTextBytes = 2048;

// What the agent said, or why it said nothing.
struct AgentMessage {
    bool answered = false;
    std::string text;
    std::string error;  // when it did not answer
};

// The agent's next message: given none, its opening; given the target's reply, its answer.
// `timeout` bounds the agent's turn.
using AgentVoice = std::function<AgentMessage(const std::optional<std::string> &target_reply,
                                              std::chrono::milliseconds timeout)>;

// Why a conversation ended (its record's "ended").
enum class RelayEnd : std::uint8_t {
    agent_done = 1,        // the agent wrote the done marker
    max_turns,             // the target answered the probe's maxTurns-th message
    agent_failed,          // the agent gave no message (its process failed or timed out)
    target_closed,         // the target closed its stdout, or ended, before answering
    target_silent,         // no answer within turnTimeoutMs (or it read nothing)
    target_malformed,      // a line that is no {"role": "assistant", "text": STRING}
    target_line_too_long,  // a line over kRelayMaxLineBytes
};
const char *to_string(RelayEnd end);

class BriefRelay {
   public:
    BriefRelay(const ConversationProbe &probe, AgentVoice agent);
    BriefRelay(const BriefRelay &) = delete;
    BriefRelay &operator=(const BriefRelay &) = delete;
    BriefRelay(BriefRelay &&) = delete;
    BriefRelay &operator=(BriefRelay &&) = delete;
    ~BriefRelay() = default;

    // The runner's stdio conversation; a retried call starts the relay afresh. Valid while this
    // object lives.
    exec::Conversation conversation();

    // Once the call has returned: the call record's "relay" (`transcript`: where the whole
    // exchange was written, relative to the trial's records).
    [[nodiscard]] nlohmann::json record(const std::string &transcript) const;
    // The whole exchange, one JSON object a turn and a line, texts uncut.
    [[nodiscard]] std::string transcript() const;
    [[nodiscard]] std::optional<RelayEnd> ended() const { return ended_; }
    // Whether the target failed the protocol (closed, silent, malformed, too long).
    [[nodiscard]] bool target_failed() const;

   private:
    struct Turn {
        bool from_agent = false;
        std::string text;
        std::chrono::milliseconds at{0};    // since the conversation began
        std::chrono::milliseconds took{0};  // the agent's writing or the target's answer
        bool malformed = false;             // a target line outside the protocol, kept as sent
    };

    void talk(const exec::ConversationChannel &channel);
    void end(RelayEnd why, std::string detail);

    ConversationProbe probe_;
    AgentVoice agent_;
    std::vector<Turn> turns_;
    int agent_messages_ = 0;
    std::optional<RelayEnd> ended_;
    std::string detail_;
};

}  // namespace tea::evaluation
