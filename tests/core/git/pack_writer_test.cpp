// The writer against real git: a pack of a blob, a blob larger than the writer's buffer, a tree
// and a commit, written with ids libgit2 computes, is one that `git verify-pack` and
// `git fsck --strict` accept and that reads back, object for object, through SourcePack.
#include "git/pack_writer.hpp"

#include <git2.h>
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "git/object_id.hpp"
#include "git/pack_reader.hpp"
#include "git_cli.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using tea::git::PackWriter;
using tea::test::git_ok;

namespace {

struct Object {
    git_object_t type;
    std::string bytes;
    git_oid id;
};

Object make_object(git_object_t type, std::string bytes) {
    git_oid id;
    EXPECT_EQ(git_odb_hash(&id, bytes.data(), bytes.size(), type), 0);
    return Object{type, std::move(bytes), id};
}

std::string raw(const git_oid &id) {
    return std::string(reinterpret_cast<const char *>(id.id), GIT_OID_RAWSZ);
}

// Bytes that do not compress, so the compressed object is larger than the writer's 1 MiB buffer.
std::string incompressible(std::size_t size) {
    std::string out(size, '\0');
    std::uint64_t state = 0x9E3779B97F4A7C15ULL;
    for (auto &c : out) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        c = static_cast<char>(state);
    }
    return out;
}

std::vector<Object> history() {
    const Object hello = make_object(GIT_OBJECT_BLOB, "hello\n");
    const Object big = make_object(GIT_OBJECT_BLOB, incompressible(std::size_t{3} << 20));
    const Object tree =
        make_object(GIT_OBJECT_TREE, "100644 big" + std::string(1, '\0') + raw(big.id) +
                                         "100644 hello" + std::string(1, '\0') + raw(hello.id));
    const Object commit =
        make_object(GIT_OBJECT_COMMIT, "tree " + tea::git::hex(tree.id) +
                                           "\nauthor A <a@example.com> 0 +0000\n"
                                           "committer A <a@example.com> 0 +0000\n\nwritten\n");
    return {commit, tree, hello, big};
}

class PackWriterTest : public ::testing::Test {
   protected:
    void SetUp() override {
        git_ok(repo_.parent_path(), {"init", "-q", "-b", "main", "--bare", repo_.string()});
    }
    fs::path pack_dir() const { return repo_ / "objects/pack"; }
    fs::path written(const std::string &extension) const {
        for (const auto &item : fs::directory_iterator(pack_dir()))
            if (item.path().extension() == extension) return item.path();
        return {};
    }
    tea::test::TempDir dir_{"tea-pack-writer"};
    fs::path repo_ = dir_.path() / "repo.git";
};

TEST_F(PackWriterTest, GitAcceptsThePackAndItReadsBack) {
    const auto objects = history();
    {
        PackWriter writer(pack_dir(), static_cast<std::uint32_t>(objects.size()));
        for (const auto &object : objects) {
            writer.begin_entry(object.id);
            writer.append_whole_object(object.type, object.bytes.data(), object.bytes.size());
        }
        writer.finish();
    }
    const fs::path idx = written(".idx");
    ASSERT_FALSE(idx.empty());
    EXPECT_FALSE(fs::exists(pack_dir() / "tmp_pack"));
    EXPECT_FALSE(fs::exists(pack_dir() / "tmp_idx"));

    const std::string listing = git_ok(repo_, {"verify-pack", "-v", idx.string()});
    for (const auto &object : objects)
        EXPECT_NE(listing.find(tea::git::hex(object.id)), std::string::npos);
    // The pack is named by its checksum, its last 20 bytes, as git names it.
    fs::path pack_file = idx;
    pack_file.replace_extension(".pack");
    std::ifstream pack_in(pack_file, std::ios::binary);
    pack_in.seekg(-GIT_OID_RAWSZ, std::ios::end);
    unsigned char trailer[GIT_OID_RAWSZ] = {};
    pack_in.read(reinterpret_cast<char *>(trailer), sizeof trailer);
    EXPECT_EQ(idx.filename(), "pack-" + tea::git::hex(tea::git::oid_from_raw(trailer)) + ".idx");
    git_ok(repo_, {"update-ref", "refs/heads/main", tea::git::hex(objects.front().id)});
    const auto fsck = tea::test::git_in(repo_, {"fsck", "--full", "--strict", "--no-dangling"});
    EXPECT_EQ(fsck.status, 0) << fsck.out << fsck.err;
    EXPECT_EQ(fsck.out + fsck.err, "");
    EXPECT_EQ(git_ok(repo_, {"cat-file", "blob", "main:hello"}), "hello\n");

    auto pack = tea::git::SourcePack::open(idx);
    ASSERT_TRUE(pack);
    ASSERT_EQ(pack->size(), objects.size());
    for (const auto &object : objects) {
        const auto pos = pack->find(object.id);
        ASSERT_TRUE(pos) << tea::git::hex(object.id);
        EXPECT_TRUE(pack->entry(*pos)) << "the entry's CRC is not the index's";
        const auto read = pack->read(*pos);
        ASSERT_TRUE(read);
        EXPECT_EQ(read->type, object.type);
        EXPECT_TRUE(std::string(read->bytes->begin(), read->bytes->end()) == object.bytes);
    }
}

TEST_F(PackWriterTest, ADifferentNumberOfObjectsThanAnnouncedIsRefused) {
    const auto objects = history();
    PackWriter writer(pack_dir(), 3);
    writer.begin_entry(objects[2].id);
    writer.append_whole_object(objects[2].type, objects[2].bytes.data(), objects[2].bytes.size());
    EXPECT_THROW(writer.finish(), std::logic_error);
    EXPECT_TRUE(written(".idx").empty());
}

}  // namespace
