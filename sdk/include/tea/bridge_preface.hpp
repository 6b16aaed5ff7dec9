// The preface the host's end of the bridge writes first on each connection to tea-bridge-relay
// (docs/services-bridge-design.md): which of the service's loopback addresses and which port the
// relay connects this connection to. Three bytes: the family (4 or 6), then the port, big-endian.
// The relay learns the port from the host, never from a file the target wrote, and the family
// picks 127.0.0.1 or ::1, nothing else: no preface can make the relay a route to another address.
// The family's high bit (kHandOver) asks the relay to hand its connection to the service back
// over the Unix connection (SCM_RIGHTS) instead of carrying bytes to it.
// C++17, like the rest of the SDK.
#ifndef TEA_BRIDGE_PREFACE_HPP
#define TEA_BRIDGE_PREFACE_HPP

#include <array>
#include <cstdint>
#include <optional>

namespace tea::bridge_preface {

inline constexpr std::size_t kBytes = 3;
inline constexpr std::uint8_t kHandOver = 0x80;

enum class Family : std::uint8_t { ipv4 = 4, ipv6 = 6 };

struct Destination {
    Family family = Family::ipv4;
    std::uint16_t port = 0;
    // The relay hands the connected socket to the host and keeps no copy (one hop, not two).
    bool hand_over = false;
};

inline std::array<std::uint8_t, kBytes> encode(const Destination &d) {
    const auto family = static_cast<std::uint8_t>(static_cast<std::uint8_t>(d.family) |
                                                  (d.hand_over ? kHandOver : 0));
    return {family, static_cast<std::uint8_t>(d.port >> 8),
            static_cast<std::uint8_t>(d.port & 0xff)};
}

// The destination, or nothing for a family other than 4 or 6 or a port of 0.
inline std::optional<Destination> decode(const std::array<std::uint8_t, kBytes> &bytes) {
    const auto family = static_cast<std::uint8_t>(bytes[0] & ~kHandOver);
    if (family != static_cast<std::uint8_t>(Family::ipv4) &&
        family != static_cast<std::uint8_t>(Family::ipv6)) {
        return std::nullopt;
    }
    const auto port = static_cast<std::uint16_t>((bytes[1] << 8) | bytes[2]);
    if (port == 0) {
        return std::nullopt;
    }
    return Destination{static_cast<Family>(family), port, (bytes[0] & kHandOver) != 0};
}

}  // namespace tea::bridge_preface

#endif
