// The reader against packs real git made: every object of a history that git stored as whole
// objects, offset deltas and deltas by id reads back as `git cat-file` shows it, and an entry
// whose bytes no longer match the index's CRC is not taken as it is stored.
#include "git/pack_reader.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "git/object_id.hpp"
#include "git_cli.hpp"
#include "support/memory.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using tea::git::SourcePack;
using tea::git::SourcePacks;
using tea::test::git_ok;

namespace {

// A history whose file changes a little in each commit, so git stores versions as deltas.
void make_history(const fs::path &repo) {
    fs::create_directories(repo / "src");
    git_ok(repo, {"init", "-q", "-b", "main"});
    std::vector<std::string> lines;
    for (int i = 0; i < 40; ++i)
        lines.push_back("line " + std::to_string(i) + ": the quick brown fox jumps\n");
    for (int version = 0; version < 4; ++version) {
        lines[static_cast<std::size_t>(version) * 9] =
            "changed in " + std::to_string(version) + "\n";
        std::ofstream notes(repo / "src/notes.txt");
        for (const auto &line : lines) notes << line;
        notes.close();
        std::ofstream(repo / "README") << "readme " << version << "\n";
        git_ok(repo, {"add", "-A"});
        git_ok(repo, {"commit", "-qm", "version " + std::to_string(version)});
    }
    git_ok(repo, {"tag", "-a", "v1", "-m", "a release"});
}

struct ListedObject {
    std::string id, type;
};

std::vector<ListedObject> all_objects(const fs::path &repo) {
    std::istringstream listing(git_ok(
        repo, {"cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)"}));
    std::vector<ListedObject> out;
    ListedObject object;
    while (listing >> object.id >> object.type) out.push_back(object);
    return out;
}

fs::path only_index(const fs::path &repo) {
    for (const auto &item : fs::directory_iterator(repo / ".git/objects/pack"))
        if (item.path().extension() == ".idx") return item.path();
    return {};
}

class PackReaderTest : public ::testing::TestWithParam<bool> {
   protected:
    void SetUp() override {
        make_history(repo_);
        // false: offset deltas, git's default; true: deltas naming their base by id.
        const std::string offsets = GetParam() ? "false" : "true";
        git_ok(repo_, {"-c", "repack.useDeltaBaseOffset=" + offsets, "repack", "-adfq"});
    }
    tea::test::TempDir dir_{"tea-pack-reader"};
    fs::path repo_ = dir_.path() / "repo";
};

TEST_P(PackReaderTest, EveryObjectReadsAsGitShowsIt) {
    SourcePacks packs(repo_ / ".git/objects");
    ASSERT_EQ(packs.object_count(), all_objects(repo_).size());
    std::size_t deltas = 0;
    for (const auto &listed : all_objects(repo_)) {
        const auto id = tea::git::parse_oid(listed.id);
        ASSERT_TRUE(id);
        const auto location = packs.find(*id);
        ASSERT_TRUE(location) << listed.id;
        const auto entry = packs.pack(location->pack).entry(location->pos);
        ASSERT_TRUE(entry) << listed.id << ": its entry does not match the index's CRC";
        if (entry->type == tea::git::kPackOfsDelta || entry->type == tea::git::kPackRefDelta)
            ++deltas;
        EXPECT_EQ(entry->type == tea::git::kPackRefDelta, GetParam() && entry->type > 4);
        const auto object = packs.read(*id);
        ASSERT_TRUE(object) << listed.id;
        EXPECT_STREQ(git_object_type2string(static_cast<git_object_t>(object->type)),
                     listed.type.c_str());
        const std::string shown = git_ok(repo_, {"cat-file", listed.type, listed.id});
        EXPECT_EQ(std::string(object->bytes->begin(), object->bytes->end()), shown) << listed.id;
    }
    EXPECT_GT(deltas, 0U) << "git stored no delta; the history no longer tests delta chains";
}

TEST_P(PackReaderTest, AnEntryThatNoLongerMatchesItsCrcIsNotTakenAsStored) {
    const fs::path idx = only_index(repo_);
    fs::path pack = idx;
    pack.replace_extension(".pack");
    auto control = SourcePack::open(idx);
    ASSERT_TRUE(control);
    ASSERT_TRUE(control->entry(0));

    // The last byte of entry 0's compressed data, flipped.
    const auto end = control->entry(0)->end;
    fs::permissions(pack, fs::perms::owner_write, fs::perm_options::add);
    std::fstream file(pack, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(end - 1));
    const char byte = static_cast<char>(file.get() ^ 0x01);
    file.seekp(static_cast<std::streamoff>(end - 1));
    file.put(byte);
    file.close();

    auto damaged = SourcePack::open(idx);
    ASSERT_TRUE(damaged);
    EXPECT_FALSE(damaged->entry(0));
    EXPECT_TRUE(damaged->entry(1));
}

TEST_P(PackReaderTest, APackPlantedAsASymbolicLinkIsNotRead) {
    const fs::path idx = only_index(repo_);
    fs::path pack = idx;
    pack.replace_extension(".pack");
    const fs::path elsewhere = dir_.path() / "elsewhere.pack";
    fs::rename(pack, elsewhere);
    fs::create_symlink(elsewhere, pack);
    EXPECT_FALSE(SourcePack::open(idx));
    fs::remove(pack);
    fs::copy_file(elsewhere, pack);
    EXPECT_TRUE(SourcePack::open(idx));  // the same bytes, as a file of the repository's own
}

// A project's pack entry whose header claims 512 MiB for a stream that makes 5 bytes: the reader
// must not take memory for what the header claims (it took it all, and zeroed it, before).
TEST(InflateExact, AHeaderThatLiesAboutTheSizeTakesNoMemoryForTheLie) {
    const std::string text = "hello";
    uLongf compressed_size = compressBound(text.size());
    std::vector<unsigned char> compressed(compressed_size);
    ASSERT_EQ(compress(compressed.data(), &compressed_size,
                       reinterpret_cast<const Bytef *>(text.data()), text.size()),
              Z_OK);
    const std::size_t before = tea::test::status_kib("VmHWM");
    EXPECT_FALSE(
        tea::git::inflate_exact(compressed.data(), compressed_size, std::size_t{512} << 20));
    EXPECT_LT(tea::test::status_kib("VmHWM") - before, std::size_t{64} << 10) << "KiB taken";
    // The control: the same stream, with the size it makes.
    const auto whole = tea::git::inflate_exact(compressed.data(), compressed_size, text.size());
    ASSERT_TRUE(whole);
    EXPECT_EQ(std::string(whole->begin(), whole->end()), text);
    EXPECT_FALSE(tea::git::inflate_exact(compressed.data(), compressed_size, text.size() - 1));
    EXPECT_FALSE(tea::git::inflate_exact(compressed.data(), compressed_size, text.size() + 1));
}

INSTANTIATE_TEST_SUITE_P(Deltas, PackReaderTest, ::testing::Bool(), [](const auto &param_info) {
    return param_info.param ? "ById" : "ByOffset";
});

}  // namespace
