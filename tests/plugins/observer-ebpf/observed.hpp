// What the eBPF observer's tests read of an observation and of a plan the observer wrapped.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "audit/observation.hpp"

namespace tea::plugins {

// How many times the observation says `path` was read, by its real path.
inline std::uint64_t reads_of(const audit::Observation &o, const std::string &path) {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < o.events.size(); ++i) {
        const auto &e = o.events[i];
        if (e.success && e.access == audit::Access::read && e.path_resolved == path) {
            n += o.counts[i];
        }
    }
    return n;
}

// The call's one-time token, which wrap put in the plan's environment.
inline std::uint64_t token_of(const nlohmann::json &wrapped) {
    for (const auto &e : wrapped["env"]) {
        const auto entry = e.get<std::string>();
        if (entry.rfind("TEA_EBPF_TOKEN=", 0) == 0) {
            return std::stoull(entry.substr(15), nullptr, 16);
        }
    }
    return 0;
}

}  // namespace tea::plugins
