// What an observer reports of one call, as the core reads it with the SDK's codec
// (tea/documents.hpp), and the judged result the records carry. The observer's collect answers
// {"complete", "reason", "targetStarted", "events": [...]}; each event is {"pid", "syscall",
// "asked", "resolved", "access", "ok", "error", "count"}, and optionally "named" and "unverified"
// (see ObservedAccess), with paths as byte strings ({"base64": ...} when not UTF-8).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "audit/judge.hpp"

namespace tea::audit {

struct Observation {
    bool complete = false;
    std::string reason;           // why it is not complete
    bool target_started = false;  // the trace shows the target's side starting
    std::vector<ObservedAccess> events;
    std::vector<std::uint64_t> counts;  // how many times each event was seen
};

// Throws std::invalid_argument naming the field for a malformed document.
Observation observation_from_json(std::string_view text);

// The audit of a call as records and output show it.
struct AuditResult {
    bool audited = false;   // an observer watched the call
    std::string observer;   // its name
    std::string why_not;    // when not audited: the reason, in a sentence
    bool complete = false;  // the observer saw the whole call
    std::string reason;     // why not complete
    std::uint64_t events = 0;
    std::vector<Finding> findings;
    std::size_t omitted = 0;
};

// Judges an observation against grants. An observation whose judge met malformed paths is not
// complete either: a path the observer lost could have been anything.
AuditResult judge_observation(const Observation &observation, const Grants &grants,
                              std::string observer);

nlohmann::json to_json(const AuditResult &result);

}  // namespace tea::audit
