// The version 2 index: what build_pack_index writes, PackIndex reads back (offsets past 2 GiB in
// the table of large offsets included), and an index that is not one is refused.
#include "git/pack_index.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "git/object_id.hpp"

namespace {

using tea::git::build_pack_index;
using tea::git::PackIndex;
using tea::git::PackIndexEntry;

git_oid id_numbered(unsigned n) {
    git_oid id{};
    id.id[0] = static_cast<unsigned char>(n * 37);  // spread over the fan-out
    id.id[19] = static_cast<unsigned char>(n);
    return id;
}

std::vector<PackIndexEntry> entries() {
    std::vector<PackIndexEntry> out;
    const std::uint64_t offsets[] = {12,          4096,          0x7fffffffU,
                                     0x80000000U, 0x123456789AU, 0xffffffffffULL};
    unsigned n = 0;
    for (const auto offset : offsets) {
        out.push_back(PackIndexEntry{id_numbered(n), offset, 0xC0FFEE00U + n});
        ++n;
    }
    return out;
}

TEST(PackIndex, WhatIsWrittenReadsBack) {
    const tea::git::Sha1Digest pack_digest{1, 2, 3};
    const auto bytes = build_pack_index(entries(), pack_digest);
    const auto index = PackIndex::parse(bytes);
    ASSERT_TRUE(index);
    ASSERT_EQ(index->count(), entries().size());
    for (const auto &entry : entries()) {
        const auto pos = index->find(entry.id);
        ASSERT_TRUE(pos) << tea::git::hex(entry.id);
        EXPECT_EQ(std::memcmp(index->name(*pos), entry.id.id, GIT_OID_RAWSZ), 0);
        EXPECT_EQ(index->offset(*pos), entry.offset);
        EXPECT_EQ(index->crc(*pos), entry.crc);
    }
    EXPECT_FALSE(index->find(id_numbered(99)));
    // The pack's checksum, then the index's own.
    EXPECT_EQ(std::memcmp(bytes.data() + bytes.size() - 40, pack_digest.data(), 20), 0);
    tea::git::PackChecksum checksum;
    checksum.update(bytes.data(), bytes.size() - 20);
    const auto own = checksum.finish();
    EXPECT_EQ(std::memcmp(bytes.data() + bytes.size() - 20, own.data(), 20), 0);
}

TEST(PackIndex, AnIdWrittenTwiceIsRefused) {
    auto twice = entries();
    twice.push_back(twice.front());
    EXPECT_THROW(build_pack_index(twice, {}), std::logic_error);
}

TEST(PackIndex, WhatIsNotAVersion2IndexIsRefused) {
    const auto good = build_pack_index(entries(), {});
    ASSERT_TRUE(PackIndex::parse(good));

    auto version1 = good;
    version1[7] = 1;
    EXPECT_FALSE(PackIndex::parse(version1));

    auto magic = good;
    magic[1] = 'x';
    EXPECT_FALSE(PackIndex::parse(magic));

    // Tables cut short: the fan-out counts more objects than the bytes hold.
    const std::vector<unsigned char> truncated(good.begin(), good.end() - 41);
    EXPECT_FALSE(PackIndex::parse(truncated));
    EXPECT_FALSE(PackIndex::parse({}));
}

// A fan-out count that exceeds a later one (or the total) would have find search "ids" past the
// table of ids, reading beyond the index file.
TEST(PackIndex, AFanOutThatDecreasesIsRefused) {
    auto bytes = build_pack_index(entries(), {});
    ASSERT_TRUE(PackIndex::parse(bytes));
    bytes[8 + 3] = static_cast<unsigned char>(entries().size() + 100);  // fan-out[0]
    EXPECT_FALSE(PackIndex::parse(bytes));
}

}  // namespace
