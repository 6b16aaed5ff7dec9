// Git's delta format: copies and inserts make the announced object, and a delta that names
// another base, copies from outside its base or makes another size than it announces is refused.
// (Deltas real git wrote are read in pack_reader_test.cpp.)
#include "git/delta.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/memory.hpp"

namespace {

using tea::git::apply_delta;
using tea::git::Bytes;

Bytes bytes(const std::string &text) {
    return Bytes(text.begin(), text.end());
}

// A delta's header: the base's size and the result's, as varints.
Bytes header(std::size_t base, std::size_t result) {
    Bytes out;
    for (std::size_t v : {base, result}) {
        do {
            const auto low = static_cast<unsigned char>(v & 0x7f);
            v >>= 7;
            out.push_back(v != 0 ? (low | 0x80) : low);
        } while (v != 0);
    }
    return out;
}

Bytes join(Bytes a, const Bytes &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Copy `size` bytes (1..255) at `offset` (0..255) of the base.
Bytes copy(unsigned char offset, unsigned char size) {
    return {0x80 | 0x01 | 0x10, offset, size};
}

Bytes insert(const std::string &text) {
    return join({static_cast<unsigned char>(text.size())}, bytes(text));
}

const Bytes kBase = bytes("the quick brown fox");

TEST(Delta, CopiesAndInsertsMakeTheObject) {
    const Bytes delta =
        join(join(join(header(kBase.size(), 12), copy(0, 4)), insert("slow ")), copy(16, 3));
    const auto result = apply_delta(kBase, delta);
    ASSERT_TRUE(result);
    EXPECT_EQ(std::string(result->begin(), result->end()), "the slow fox");
}

TEST(Delta, ACopyOfSizeZeroCopies64KiB) {
    const Bytes base(0x10000, 'x');
    const Bytes delta = join(header(base.size(), base.size()), {0x80});
    const auto result = apply_delta(base, delta);
    ASSERT_TRUE(result);
    EXPECT_EQ(*result, base);
}

TEST(Delta, AnotherBaseSizeIsRefused) {
    EXPECT_FALSE(apply_delta(kBase, join(header(kBase.size() + 1, 4), copy(0, 4))));
}

TEST(Delta, ACopyFromOutsideTheBaseIsRefused) {
    const auto size = static_cast<unsigned char>(kBase.size());
    EXPECT_TRUE(apply_delta(kBase, join(header(size, size), copy(0, size))));
    EXPECT_FALSE(apply_delta(kBase, join(header(size, size + 1), copy(0, size + 1))));
    EXPECT_FALSE(apply_delta(kBase, join(header(size, 1), copy(size, 1))));
    // An offset far past the base, in all four offset bytes.
    EXPECT_FALSE(
        apply_delta(kBase, join(header(size, 1), {0x80 | 0x0f | 0x10, 0xff, 0xff, 0xff, 0xff, 1})));
}

TEST(Delta, AnotherResultSizeIsRefused) {
    EXPECT_FALSE(apply_delta(kBase, join(header(kBase.size(), 5), copy(0, 4))));
    EXPECT_FALSE(apply_delta(kBase, join(header(kBase.size(), 3), copy(0, 4))));
}

TEST(Delta, MalformedInstructionsAreRefused) {
    // The reserved instruction 0, an insert longer than the delta, a copy cut short, no header.
    EXPECT_FALSE(apply_delta(kBase, join(header(kBase.size(), 0), {0})));
    EXPECT_FALSE(apply_delta(kBase, join(header(kBase.size(), 5), {5, 'a', 'b'})));
    EXPECT_FALSE(apply_delta(kBase, join(header(kBase.size(), 4), {0x80 | 0x01 | 0x10, 0})));
    EXPECT_FALSE(apply_delta(kBase, Bytes{}));
    EXPECT_FALSE(apply_delta(kBase, Bytes{0x80, 0x80, 0x80}));
}

// A delta whose header claims a 512 MiB result for two bytes of instructions: the reader must not
// reserve memory for what the header claims (it reserved it all before).
TEST(Delta, AResultSizeThatLiesTakesNoMemoryForTheLie) {
    const std::size_t before = tea::test::status_kib("VmPeak");
    EXPECT_FALSE(
        apply_delta(kBase, join(header(kBase.size(), std::size_t{512} << 20), copy(0, 4))));
    EXPECT_LT(tea::test::status_kib("VmPeak") - before, std::size_t{64} << 10) << "KiB taken";
}

}  // namespace
