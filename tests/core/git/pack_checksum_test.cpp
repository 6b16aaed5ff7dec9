// The pack and index checksum is git's SHA-1: the digest of an object's bytes framed as git frames
// them ("blob <size>\0...") is the id that `git hash-object` and libgit2's git_odb_hash give.
#include "git/pack_checksum.hpp"

#include <git2.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "git/object_id.hpp"
#include "git_cli.hpp"
#include "support/temp_dir.hpp"

namespace {

using tea::git::PackChecksum;
using tea::git::Sha1Digest;

std::string hex_of(const Sha1Digest &digest) {
    return tea::git::hex(tea::git::oid_from_raw(digest.data()));
}

std::string blob_id(const std::string &content) {
    const std::string framed = "blob " + std::to_string(content.size()) + '\0' + content;
    PackChecksum checksum;
    checksum.update(reinterpret_cast<const unsigned char *>(framed.data()), framed.size());
    return hex_of(checksum.finish());
}

// Contents at each edge of SHA-1's padding (55, 56 and 64 bytes of a final block) and several
// blocks long, so every path of the digest is compared.
std::vector<std::string> contents() {
    std::vector<std::string> out{"", "hello\n"};
    for (const std::size_t size : {std::size_t{44}, std::size_t{45}, std::size_t{52},
                                   std::size_t{53}, std::size_t{100000}}) {
        std::string text;
        for (std::size_t i = 0; i < size; ++i) text += static_cast<char>('a' + i * 7 % 26);
        out.push_back(text);
    }
    return out;
}

TEST(PackChecksum, KnownDigest) {
    PackChecksum checksum;
    const std::string abc = "abc";
    checksum.update(reinterpret_cast<const unsigned char *>(abc.data()), abc.size());
    EXPECT_EQ(hex_of(checksum.finish()), "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST(PackChecksum, ObjectIdsAreGitsAndLibgit2s) {
    const tea::test::TempDir dir("tea-pack-checksum");
    for (const auto &content : contents()) {
        const auto file = dir.path() / "content";
        std::ofstream(file, std::ios::binary) << content;
        const std::string from_git =
            tea::test::trimmed(tea::test::git_ok(dir.path(), {"hash-object", file.string()}));
        git_oid from_libgit2;
        ASSERT_EQ(git_odb_hash(&from_libgit2, content.data(), content.size(), GIT_OBJECT_BLOB), 0);
        EXPECT_EQ(blob_id(content), from_git) << content.size() << " bytes";
        EXPECT_EQ(blob_id(content), tea::git::hex(from_libgit2)) << content.size() << " bytes";
    }
}

TEST(PackChecksum, PiecesGiveTheDigestOfTheWhole) {
    const std::string text = contents().back();
    PackChecksum whole;
    whole.update(reinterpret_cast<const unsigned char *>(text.data()), text.size());
    PackChecksum pieces;
    for (std::size_t at = 0, step = 1; at < text.size(); at += step, step = step * 3 % 997 + 1)
        pieces.update(reinterpret_cast<const unsigned char *>(text.data()) + at,
                      std::min(step, text.size() - at));
    EXPECT_EQ(pieces.finish(), whole.finish());
}

}  // namespace
