#include "evaluation/brief_relay.hpp"

#include <fcntl.h>

#include <utility>

#include "evaluation/host_unchanged.hpp"
#include "services/mcp_stdio_transport.hpp"
#include "services/mcp_types.hpp"
#include "util/fd.hpp"

namespace tea::evaluation {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The transport owns what it is given; the runner closes its own ends once talk returns.
UniqueFd own_copy(int fd) {
    return UniqueFd{fd >= 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1};
}

milliseconds since(Clock::time_point start) {
    return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
}

// The target's reply, or none for a line outside the protocol; members beyond the two are
// ignored. nlohmann's parser keeps its own stack, and only two members are read, so however the
// line nests nothing recurses over it.
std::optional<std::string> assistant_text(const std::string &line) {
    const auto doc = json::parse(line, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("role") ||
        doc["role"] != "assistant" || !doc.contains("text") || !doc["text"].is_string()) {
        return std::nullopt;
    }
    return doc["text"].get<std::string>();
}

}  // namespace

const char *to_string(RelayEnd end) {
    switch (end) {
        case RelayEnd::agent_done:
            return "agentDone";
        case RelayEnd::max_turns:
            return "maxTurns";
        case RelayEnd::agent_failed:
            return "agentFailed";
        case RelayEnd::target_closed:
            return "targetClosed";
        case RelayEnd::target_silent:
            return "targetSilent";
        case RelayEnd::target_malformed:
            return "targetMalformed";
        case RelayEnd::target_line_too_long:
            return "targetLineTooLong";
    }
    return "unknown";
}

BriefRelay::BriefRelay(const ConversationProbe &probe, AgentVoice agent)
    : probe_{probe}, agent_{std::move(agent)} {}

exec::Conversation BriefRelay::conversation() {
    return {true, [this](const exec::ConversationChannel &channel) { talk(channel); }};
}

bool BriefRelay::target_failed() const {
    return ended_ && *ended_ != RelayEnd::agent_done && *ended_ != RelayEnd::max_turns &&
           *ended_ != RelayEnd::agent_failed;
}

void BriefRelay::end(RelayEnd why, std::string detail) {
    ended_ = why;
    detail_ = std::move(detail);
}

void BriefRelay::talk(const exec::ConversationChannel &channel) {
    turns_.clear();
    agent_messages_ = 0;
    ended_.reset();
    detail_.clear();
    // The MCP client's stdio framing is the relay's too: a line a message, a line over the cap
    // skipped as it arrives, a write to a target that reads nothing bounded by the deadline.
    services::McpLimits limits;
    limits.max_line_bytes = kRelayMaxLineBytes;
    limits.record_bytes = kRelayRecordTextBytes;
    services::McpStdioTransport target{own_copy(channel.to_target), own_copy(channel.from_target),
                                       limits};
    // A target that left its stdout to a process it forked cannot hold the relay past the call.
    target.stop_when_readable(channel.call_ended);
    const milliseconds turn_timeout{probe_.turn_timeout_ms};
    const auto start = Clock::now();
    std::optional<std::string> reply;
    for (;;) {
        if (agent_messages_ == probe_.max_turns) {
            end(RelayEnd::max_turns, "the target answered the agent's " +
                                         std::to_string(probe_.max_turns) + " message(s)");
            return;
        }
        const auto asked = Clock::now();
        auto said = agent_(reply, turn_timeout);
        if (!said.answered) {
            end(RelayEnd::agent_failed, said.error.empty()
                                            ? "the agent gave no message"
                                            : "the agent gave no message: " + said.error);
            return;
        }
        turns_.push_back({true, said.text, since(start), since(asked), false});
        if (said.text.find(kConversationDoneMarker) != std::string::npos) {
            end(RelayEnd::agent_done, "the agent wrote " + std::string{kConversationDoneMarker});
            return;
        }
        ++agent_messages_;
        std::optional<std::string> answer;
        std::optional<std::string> malformed;
        std::size_t too_long = 0;
        const services::McpInbox inbox{
            [&](const std::string &line) {
                answer = assistant_text(line);
                if (!answer) malformed = line;
                return true;
            },
            [&](services::McpPeerEventKind kind, std::string_view, std::size_t bytes) {
                if (kind == services::McpPeerEventKind::line_too_long) too_long = bytes;
            }};
        const auto sent = Clock::now();
        const auto delivery =
            target.send(json{{"role", "user"}, {"text", said.text}}.dump(
                            -1, ' ', false, json::error_handler_t::replace),
                        true, "the agent's message", sent + turn_timeout, turn_timeout, inbox);
        if (too_long != 0) {
            end(RelayEnd::target_line_too_long,
                "the target wrote a line of " + std::to_string(too_long) + " bytes; the limit is " +
                    std::to_string(kRelayMaxLineBytes));
            return;
        }
        if (delivery.outcome == services::McpOutcome::timed_out) {
            end(RelayEnd::target_silent, "the target did not answer within " +
                                             std::to_string(probe_.turn_timeout_ms) + " ms");
            return;
        }
        if (delivery.outcome != services::McpOutcome::result) {
            end(RelayEnd::target_closed,
                "the target closed its stdout or ended before answering message " +
                    std::to_string(agent_messages_));
            return;
        }
        if (malformed) {
            turns_.push_back({false, *malformed, since(start), since(sent), true});
            end(RelayEnd::target_malformed,
                "the target wrote a line that is not {\"role\": \"assistant\", \"text\": "
                "STRING}");
            return;
        }
        turns_.push_back({false, *answer, since(start), since(sent), false});
        reply = std::move(answer);
    }
}

json BriefRelay::record(const std::string &transcript) const {
    json turns = json::array();
    for (const auto &turn : turns_) {
        auto [text, cut] = services::cut_for_record(turn.text, kRelayRecordTextBytes);
        json t{{"from", turn.from_agent ? "agent" : "target"},
               {"text", std::move(text)},
               {"bytes", turn.text.size()},
               {"textCut", cut},
               {"atMs", turn.at.count()},
               {"tookMs", turn.took.count()}};
        if (turn.malformed) t["malformed"] = true;
        turns.push_back(std::move(t));
    }
    // The brief's digest tells which brief a run was given; its text stays in the evaluation
    // folder, where the target never looks and the grader may read it.
    return {{"briefFile", probe_.brief_path},
            {"briefSha256", sha256_hex(probe_.brief)},
            {"maxTurns", probe_.max_turns},
            {"turnTimeoutMs", probe_.turn_timeout_ms},
            {"agentMessages", agent_messages_},
            {"ended", ended_ ? json(to_string(*ended_)) : json(nullptr)},
            {"detail", ended_ ? json(detail_) : json("the conversation never began")},
            {"targetFailed", target_failed()},
            {"turns", std::move(turns)},
            {"transcript", transcript}};
}

std::string BriefRelay::transcript() const {
    std::string out;
    for (std::size_t i = 0; i < turns_.size(); ++i) {
        const auto &turn = turns_[i];
        json line{{"turn", i + 1},
                  {"from", turn.from_agent ? "agent" : "target"},
                  {"text", turn.text},
                  {"atMs", turn.at.count()},
                  {"tookMs", turn.took.count()}};
        if (turn.malformed) line["malformed"] = true;
        out += line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    }
    return out;
}

}  // namespace tea::evaluation
