// What the tool-server client's tests ask of its peer events.
#pragma once

#include <cstddef>

#include "services/mcp_client.hpp"

namespace tea::test {

// How many of the client's peer events are of `kind`.
inline std::size_t count(const services::McpClient &client, services::McpPeerEventKind kind) {
    std::size_t n = 0;
    for (const auto &event : client.peer_events()) {
        n += event.kind == kind ? 1 : 0;
    }
    return n;
}

}  // namespace tea::test
