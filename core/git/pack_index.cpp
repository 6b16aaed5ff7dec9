#include "git/pack_index.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>

#include "git/byte_order.hpp"
#include "git/object_id.hpp"

namespace tea::git {
namespace {

constexpr unsigned char kIndexMagic[] = {0xff, 't', 'O', 'c', 0, 0, 0, 2};
constexpr std::size_t kHeaderBytes = 8;
constexpr std::size_t kFanoutBytes = std::size_t{256} * 4;
constexpr std::size_t kTrailerBytes = std::size_t{2} * GIT_OID_RAWSZ;

}  // namespace

std::optional<PackIndex> PackIndex::parse(std::span<const unsigned char> bytes) {
    if (bytes.size() < kHeaderBytes + kFanoutBytes + kTrailerBytes ||
        std::memcmp(bytes.data(), kIndexMagic, sizeof kIndexMagic) != 0)
        return std::nullopt;
    const PackIndex index(bytes);
    // A count that exceeds a later one (or the total) would have find() search past the table of
    // ids: a crafted index would make the runtime read beyond the file.
    for (unsigned first = 1; first < 256; ++first)
        if (index.fanout(first - 1) > index.fanout(first)) return std::nullopt;
    const std::size_t n = index.count();
    const std::size_t minimum =
        kHeaderBytes + kFanoutBytes + n * (GIT_OID_RAWSZ + 8) + kTrailerBytes;
    if (bytes.size() < minimum) return std::nullopt;
    return index;
}

std::optional<std::uint32_t> PackIndex::find(const git_oid &oid) const {
    const unsigned char first = oid.id[0];
    std::uint32_t lo = first == 0 ? 0 : fanout(first - 1);
    std::uint32_t hi = fanout(first);
    while (lo < hi) {
        const std::uint32_t mid = lo + (hi - lo) / 2;
        const int cmp = std::memcmp(name(mid), oid.id, GIT_OID_RAWSZ);
        if (cmp == 0) return mid;
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return std::nullopt;
}

const unsigned char *PackIndex::name(std::uint32_t pos) const {
    return bytes_.data() + kHeaderBytes + kFanoutBytes + std::size_t{pos} * GIT_OID_RAWSZ;
}

std::uint32_t PackIndex::crc(std::uint32_t pos) const {
    return be32(bytes_.data() + crc_table() + 4 * std::size_t{pos});
}

std::uint64_t PackIndex::offset(std::uint32_t pos) const {
    const std::uint32_t small = be32(bytes_.data() + offset_table() + 4 * std::size_t{pos});
    if ((small & 0x80000000U) == 0) return small;
    const std::size_t at = large_offset_table() + 8 * std::size_t{small & 0x7fffffffU};
    if (at + 8 > bytes_.size() - kTrailerBytes) return 0;
    return (std::uint64_t{be32(bytes_.data() + at)} << 32) | be32(bytes_.data() + at + 4);
}

std::uint32_t PackIndex::fanout(unsigned first_byte) const {
    return be32(bytes_.data() + kHeaderBytes + std::size_t{4} * first_byte);
}

std::size_t PackIndex::crc_table() const {
    return kHeaderBytes + kFanoutBytes + std::size_t{count()} * GIT_OID_RAWSZ;
}
std::size_t PackIndex::offset_table() const {
    return crc_table() + std::size_t{count()} * 4;
}
std::size_t PackIndex::large_offset_table() const {
    return offset_table() + std::size_t{count()} * 4;
}

std::vector<unsigned char> build_pack_index(std::vector<PackIndexEntry> entries,
                                            const Sha1Digest &pack_digest) {
    std::sort(entries.begin(), entries.end(), [](const PackIndexEntry &a, const PackIndexEntry &b) {
        return git_oid_cmp(&a.id, &b.id) < 0;
    });
    for (std::size_t i = 1; i < entries.size(); ++i)
        if (git_oid_equal(&entries[i - 1].id, &entries[i].id))
            throw std::logic_error("object " + hex(entries[i].id) + " was written twice");
    std::vector<unsigned char> out;
    out.reserve(kHeaderBytes + kFanoutBytes + entries.size() * 28 + kTrailerBytes);
    out.insert(out.end(), std::begin(kIndexMagic), std::end(kIndexMagic));
    std::size_t at = 0;
    for (unsigned first = 0; first < 256; ++first) {
        while (at < entries.size() && entries[at].id.id[0] == first) ++at;
        put_be32(out, static_cast<std::uint32_t>(at));
    }
    for (const auto &e : entries) out.insert(out.end(), e.id.id, e.id.id + GIT_OID_RAWSZ);
    for (const auto &e : entries) put_be32(out, e.crc);
    std::vector<std::uint64_t> large;
    for (const auto &e : entries) {
        if (e.offset < 0x80000000U) {
            put_be32(out, static_cast<std::uint32_t>(e.offset));
        } else {
            put_be32(out, 0x80000000U | static_cast<std::uint32_t>(large.size()));
            large.push_back(e.offset);
        }
    }
    for (const auto offset : large) {
        put_be32(out, static_cast<std::uint32_t>(offset >> 32));
        put_be32(out, static_cast<std::uint32_t>(offset));
    }
    out.insert(out.end(), pack_digest.begin(), pack_digest.end());
    PackChecksum checksum;
    checksum.update(out.data(), out.size());
    const auto digest = checksum.finish();
    out.insert(out.end(), digest.begin(), digest.end());
    return out;
}

}  // namespace tea::git
