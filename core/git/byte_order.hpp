// Big-endian 32-bit numbers, as git's pack and index formats store them.
#pragma once

#include <cstdint>
#include <vector>

namespace tea::git {

inline std::uint32_t be32(const unsigned char *p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
           std::uint32_t{p[3]};
}

inline void put_be32(std::vector<unsigned char> &out, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
        out.push_back(static_cast<unsigned char>(v >> shift));
}

}  // namespace tea::git
