#include "git/pack_checksum.hpp"

#include <algorithm>
#include <cstring>

namespace tea::git {
namespace {

std::uint32_t rol(std::uint32_t v, int n) {
    return (v << n) | (v >> (32 - n));
}

}  // namespace

void PackChecksum::update(const unsigned char *data, std::size_t size) {
    length_ += size;
    while (size > 0) {
        const std::size_t take = std::min(size, block_.size() - used_);
        std::memcpy(block_.data() + used_, data, take);
        used_ += take;
        data += take;
        size -= take;
        if (used_ == block_.size()) {
            compress(block_.data());
            used_ = 0;
        }
    }
}

Sha1Digest PackChecksum::finish() {
    const std::uint64_t bits = length_ * 8;
    const unsigned char pad = 0x80;
    update(&pad, 1);
    const unsigned char zero = 0;
    while (used_ != 56) update(&zero, 1);
    std::array<unsigned char, 8> length_bytes{};
    for (int i = 0; i < 8; ++i)
        length_bytes[static_cast<std::size_t>(i)] =
            static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(length_bytes.data(), length_bytes.size());
    Sha1Digest digest{};
    for (std::size_t i = 0; i < 5; ++i)
        for (std::size_t j = 0; j < 4; ++j)
            digest[i * 4 + j] = static_cast<unsigned char>(state_[i] >> (24 - 8 * j));
    return digest;
}

void PackChecksum::compress(const unsigned char *p) {
    std::array<std::uint32_t, 80> w{};
    for (std::size_t i = 0; i < 16; ++i)
        w[i] = (std::uint32_t{p[4 * i]} << 24) | (std::uint32_t{p[4 * i + 1]} << 16) |
               (std::uint32_t{p[4 * i + 2]} << 8) | std::uint32_t{p[4 * i + 3]};
    for (std::size_t i = 16; i < 80; ++i)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3], e = state_[4];
    for (std::size_t i = 0; i < 80; ++i) {
        std::uint32_t f = 0;
        std::uint32_t k = 0;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDC;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6;
        }
        const std::uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    state_[0] += a;
    state_[1] += b;
    state_[2] += c;
    state_[3] += d;
    state_[4] += e;
}

}  // namespace tea::git
