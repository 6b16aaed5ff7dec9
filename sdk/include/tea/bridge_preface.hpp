// The preface the host's end of the bridge writes first on each connection to tea-bridge-relay
// (docs/services-bridge-design.md): which of the service's loopback addresses and which port the
// relay connects this connection to. Three bytes: the family (4 or 6), then the port, big-endian.
// The relay learns the port from the host, never from a file the target wrote, and the family
// picks 127.0.0.1 or ::1, nothing else: no preface can make the relay a route to another address.
// C++17, like the rest of the SDK.
#ifndef TEA_BRIDGE_PREFACE_HPP
#define TEA_BRIDGE_PREFACE_HPP

#include <array>
#include <cstdint>
#include <optional>

namespace tea::bridge_preface {

inline constexpr std::size_t kBytes = 3;

enum class Family : std::uint8_t { ipv4 = 4, ipv6 = 6 };

struct Destination {
    Family family = Family::ipv4;
    std::uint16_t port = 0;
};

inline std::array<std::uint8_t, kBytes> encode(const Destination &d) {
    return {static_cast<std::uint8_t>(d.family), static_cast<std::uint8_t>(d.port >> 8),
            static_cast<std::uint8_t>(d.port & 0xff)};
}

// The destination, or nothing for a family other than 4 or 6 or a port of 0.
inline std::optional<Destination> decode(const std::array<std::uint8_t, kBytes> &bytes) {
    if (bytes[0] != static_cast<std::uint8_t>(Family::ipv4) &&
        bytes[0] != static_cast<std::uint8_t>(Family::ipv6)) {
        return std::nullopt;
    }
    const auto port = static_cast<std::uint16_t>((bytes[1] << 8) | bytes[2]);
    if (port == 0) {
        return std::nullopt;
    }
    return Destination{static_cast<Family>(bytes[0]), port};
}

}  // namespace tea::bridge_preface

#endif
