// What a call's followed log says: the sandbox's refusals during the call as observed events,
// and whether the channel was complete or lossy. Pure: the follower's two files in, the
// observation out.
//
// The channel is lossy (observedMountsChannel "lossy") when
//   - the log delivered fewer canary reads than the follower sent,
//   - it reported lost events,
//   - it said it was handed reports faster than it keeps them (the reason names logOverloaded),
//   - or a line of it could not be read (cut short, not JSON): what it held is unknown.
// A report counts for the call when it lies between the readiness canary's report and the closing
// canary's, the follower's bracket around the call; without the closing one, every report after
// the readiness canary counts (an unknown end is taken as the call's, never dropped).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <tea/documents.hpp>
#include <vector>

namespace tea::logstream {

struct Canary {
    std::string path;  // the real path its refused read names
};

// The limit on distinct events kept; past it the observation is lossy.
inline constexpr std::size_t kMaxDistinctEvents = 100000;

// `log` is log.ndjson as written; `canaries` the follower's, in the order they were sent.
documents::Observation audit_log(std::string_view log, const std::vector<Canary> &canaries);

// The follower's follow.json read: the canaries, or a sentence why the log was not followed.
struct FollowRecord {
    bool followed = false;
    std::string reason;
    std::vector<Canary> canaries;
};
FollowRecord read_follow_record(std::string_view text);

}  // namespace tea::logstream
