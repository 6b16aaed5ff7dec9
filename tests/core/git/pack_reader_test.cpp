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
#include "git/pack_writer.hpp"
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

// A pack of a blob "x" and `depth` deltas by id, each on the one before and adding a "y", written
// with PackWriter; answers the ids, the blob's first. With cycle, the blob is itself a delta on
// the last object instead, so the chain never reaches a whole object.
std::vector<git_oid> write_delta_chain(const fs::path &pack_dir, std::uint32_t depth, bool cycle) {
    std::vector<git_oid> ids(depth + 1);
    for (std::uint32_t i = 0; i <= depth; ++i) {
        const std::string name = std::to_string(i);
        git_odb_hash(&ids[i], name.data(), name.size(), GIT_OBJECT_BLOB);  // distinct ids
    }
    const auto compressed = [](const std::vector<unsigned char> &bytes) {
        uLongf size = compressBound(static_cast<uLong>(bytes.size()));
        std::vector<unsigned char> out(size);
        EXPECT_EQ(compress(out.data(), &size, bytes.data(), static_cast<uLong>(bytes.size())),
                  Z_OK);
        out.resize(size);
        return out;
    };
    const auto delta_adding_y = [](std::size_t base_size) {
        // Base size and result size (each under 2^14, two varint bytes), copy the whole base,
        // insert "y".
        std::vector<unsigned char> delta;
        for (const std::size_t v : {base_size, base_size + 1}) {
            delta.push_back(static_cast<unsigned char>(0x80 | (v & 0x7f)));
            delta.push_back(static_cast<unsigned char>(v >> 7));
        }
        delta.insert(delta.end(),
                     {0x80 | 0x01 | 0x02 | 0x10 | 0x20, static_cast<unsigned char>(0),
                      static_cast<unsigned char>(0), static_cast<unsigned char>(base_size & 0xff),
                      static_cast<unsigned char>(base_size >> 8), 1, 'y'});
        return delta;
    };
    tea::git::PackWriter writer(pack_dir, depth + 1);
    for (std::uint32_t i = 0; i <= depth; ++i) {
        writer.begin_entry(ids[i]);
        if (i == 0 && !cycle) {
            writer.append_whole_object(GIT_OBJECT_BLOB, "x", 1);
            continue;
        }
        const auto delta = compressed(delta_adding_y(i == 0 ? depth : i));
        writer.append_header(tea::git::kPackRefDelta, delta_adding_y(i == 0 ? depth : i).size());
        writer.append(ids[i == 0 ? depth : i - 1].id, GIT_OID_RAWSZ);
        writer.append(delta.data(), delta.size());
    }
    writer.finish();
    return ids;
}

fs::path index_in(const fs::path &pack_dir) {
    for (const auto &item : fs::directory_iterator(pack_dir))
        if (item.path().extension() == ".idx") return item.path();
    return {};
}

// Git writes chains up to 4095 deltas deep (pack-objects clamps --depth there); the reader follows
// as many and refuses a longer one, so a crafted chain cannot take the stack.
TEST(DeltaChain, AChainAsDeepAsGitWritesIsRead) {
    const tea::test::TempDir dir("tea-delta-chain");
    const auto ids = write_delta_chain(dir.path(), 4095, false);
    auto pack = SourcePack::open(index_in(dir.path()));
    ASSERT_TRUE(pack);
    const auto deepest = pack->read(*pack->find(ids.back()));
    ASSERT_TRUE(deepest);
    EXPECT_EQ(std::string(deepest->bytes->begin(), deepest->bytes->end()),
              "x" + std::string(4095, 'y'));
}

TEST(DeltaChain, AChainDeeperThanGitWritesIsRefused) {
    const tea::test::TempDir dir("tea-delta-chain");
    const auto ids = write_delta_chain(dir.path(), 4200, false);
    auto pack = SourcePack::open(index_in(dir.path()));
    ASSERT_TRUE(pack);
    EXPECT_FALSE(pack->read(*pack->find(ids.back())));
    EXPECT_TRUE(pack->read(*pack->find(ids[4000])));  // the control: within the bound
}

TEST(DeltaChain, AChainThatLoopsIsRefused) {
    const tea::test::TempDir dir("tea-delta-chain");
    const auto ids = write_delta_chain(dir.path(), 3, true);
    auto pack = SourcePack::open(index_in(dir.path()));
    ASSERT_TRUE(pack);
    for (const auto &id : ids) EXPECT_FALSE(pack->read(*pack->find(id)));
}

INSTANTIATE_TEST_SUITE_P(Deltas, PackReaderTest, ::testing::Bool(), [](const auto &param_info) {
    return param_info.param ? "ById" : "ByOffset";
});

}  // namespace
