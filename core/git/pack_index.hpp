// A pack's index file (.idx), version 2: a fan-out table of 256 counts by first id byte, the
// sorted object ids, a CRC-32 of each object's pack entry, each entry's offset in the pack (those
// of 2 GiB and beyond in a second table of 64-bit offsets), then the pack's checksum and the
// index's own. Read in place from the project's packs and written for the private one.
#pragma once

#include <git2.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "git/pack_checksum.hpp"

namespace tea::git {

// A version 2 index read in place; the bytes must outlive it.
class PackIndex {
   public:
    // nullopt unless bytes are a version 2 index whose fan-out never decreases and whose tables
    // fit in them.
    static std::optional<PackIndex> parse(std::span<const unsigned char> bytes);

    std::uint32_t count() const { return fanout(255); }
    // The position of oid in the sorted ids.
    std::optional<std::uint32_t> find(const git_oid &oid) const;
    // The raw id at position pos < count().
    const unsigned char *name(std::uint32_t pos) const;
    std::uint32_t crc(std::uint32_t pos) const;
    // The offset of the entry at position pos in the pack; 0 when a large offset lies outside
    // the index.
    std::uint64_t offset(std::uint32_t pos) const;

   private:
    explicit PackIndex(std::span<const unsigned char> bytes) : bytes_(bytes) {}
    std::uint32_t fanout(unsigned first_byte) const;
    std::size_t crc_table() const;
    std::size_t offset_table() const;
    std::size_t large_offset_table() const;

    std::span<const unsigned char> bytes_;
};

struct PackIndexEntry {
    git_oid id;
    std::uint64_t offset;  // of the entry's header in the pack
    std::uint32_t crc;     // of the entry's bytes as stored
};

// The bytes of the index of a pack holding entries, whose checksum is pack_digest. Throws
// std::logic_error when two entries have the same id.
std::vector<unsigned char> build_pack_index(std::vector<PackIndexEntry> entries,
                                            const Sha1Digest &pack_digest);

}  // namespace tea::git
