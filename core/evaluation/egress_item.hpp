// A host an entry's target, a rubric judge or a sealed-brief agent may reach through the egress
// route ("egress" in evaluation.json and in a conversation's agent; docs/evaluation-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tea::evaluation {

struct EgressItem {
    std::string host;  // as written; an IPv6 address without brackets
    std::uint16_t port = 0;
    // Not pinned: the resolved addresses allowed (empty: any). Pinned ("pinned" in the file):
    // the addresses connected to, in order, without resolving the host.
    std::vector<std::string> addresses;
    bool pinned = false;
};

}  // namespace tea::evaluation
