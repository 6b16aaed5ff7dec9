// The runtime's reads and writes in a workspace a target left behind: links, fifos and large files
// must never lead it elsewhere, block it or fill the disk. Each refusal has its control.
#include "files/beneath.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace tea::files {
namespace {

namespace stdfs = std::filesystem;

class Beneath : public ::testing::Test {
   protected:
    void SetUp() override {
        base_ = tmp_.path();
        ws_ = base_ / "ws";
        out_ = base_ / "out";
        stdfs::create_directories(ws_);
        stdfs::create_directories(out_);
        secret_ = base_ / "secret";
        std::ofstream{secret_} << "grading material";
    }
    static std::string slurp(const stdfs::path &p) {
        std::ifstream in{p};
        return {std::istreambuf_iterator<char>{in}, {}};
    }

    test::TempDir tmp_{"tea-beneath"};
    stdfs::path base_, ws_, out_, secret_;
};

TEST_F(Beneath, CopiesARegularFile) {
    std::ofstream{ws_ / "report.txt"} << "words=5";
    const auto r = copy_out_beneath(ws_, "report.txt", out_ / "a", 1 << 20);
    EXPECT_EQ(r.status, CopyResult::Status::copied);
    EXPECT_EQ(slurp(out_ / "a"), "words=5");
}

TEST_F(Beneath, RefusesALinkToTheGradingMaterial) {
    stdfs::create_symlink(secret_, ws_ / "report.txt");
    // Control: the link does lead to the secret for anyone who follows it.
    EXPECT_EQ(slurp(ws_ / "report.txt"), "grading material");
    const auto r = copy_out_beneath(ws_, "report.txt", out_ / "a", 1 << 20);
    EXPECT_EQ(r.status, CopyResult::Status::refused);
    EXPECT_FALSE(stdfs::exists(out_ / "a"));
}

TEST_F(Beneath, RefusesALinkedDirectoryOnTheWay) {
    stdfs::create_directory_symlink(base_, ws_ / "out");
    EXPECT_TRUE(stdfs::exists(ws_ / "out" / "secret"));  // control
    const auto r = copy_out_beneath(ws_, "out/secret", out_ / "a", 1 << 20);
    EXPECT_EQ(r.status, CopyResult::Status::refused);
}

TEST_F(Beneath, RefusesDotDotAndAbsolutePaths) {
    EXPECT_EQ(copy_out_beneath(ws_, "../secret", out_ / "a", 1 << 20).status,
              CopyResult::Status::refused);
    EXPECT_EQ(copy_out_beneath(ws_, secret_.string(), out_ / "b", 1 << 20).status,
              CopyResult::Status::refused);
    EXPECT_THROW(write_beneath(ws_, "../planted", "x"), Error);
    EXPECT_FALSE(stdfs::exists(base_ / "planted"));
}

TEST_F(Beneath, AFifoNeitherBlocksNorCopies) {
    ASSERT_EQ(::mkfifo((ws_ / "report.txt").c_str(), 0644), 0);
    const auto started = std::chrono::steady_clock::now();
    const auto r = copy_out_beneath(ws_, "report.txt", out_ / "a", 1 << 20);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds{2});
    EXPECT_EQ(r.status, CopyResult::Status::refused);
    EXPECT_THROW(write_beneath(ws_, "report.txt", "x"), Error);
}

TEST_F(Beneath, ALargeFileIsCutAtTheCap) {
    {
        std::ofstream big{ws_ / "big"};
        big << std::string(100000, 'x');
    }
    const auto r = copy_out_beneath(ws_, "big", out_ / "a", 4096);
    EXPECT_EQ(r.status, CopyResult::Status::truncated);
    EXPECT_EQ(r.bytes, 4096U);
    EXPECT_EQ(stdfs::file_size(out_ / "a"), 4096U);
    // Control: under the cap it is whole.
    const auto whole = copy_out_beneath(ws_, "big", out_ / "b", 1 << 20);
    EXPECT_EQ(whole.status, CopyResult::Status::copied);
    EXPECT_EQ(stdfs::file_size(out_ / "b"), 100000U);
}

TEST_F(Beneath, AMissingArtifactIsMissing) {
    EXPECT_EQ(copy_out_beneath(ws_, "nope", out_ / "a", 10).status, CopyResult::Status::missing);
}

TEST_F(Beneath, WritesMakeDirectoriesAndNeverFollowALink) {
    write_beneath(ws_, "notes/today.txt", "five");
    EXPECT_EQ(slurp(ws_ / "notes" / "today.txt"), "five");
    write_beneath(ws_, "notes/today.txt", "two");  // replaces
    EXPECT_EQ(slurp(ws_ / "notes" / "today.txt"), "two");
    // A link planted where a probe's file goes must not carry the write to the secret.
    stdfs::create_symlink(secret_, ws_ / "input.txt");
    EXPECT_THROW(write_beneath(ws_, "input.txt", "overwritten"), Error);
    stdfs::create_directory_symlink(base_, ws_ / "dir");
    EXPECT_THROW(write_beneath(ws_, "dir/secret", "overwritten"), Error);
    EXPECT_EQ(slurp(secret_), "grading material");
}

TEST_F(Beneath, AtomicWriteReplacesWholeAndLeavesNoTemp) {
    write_atomically(out_ / "run.json", "{\"a\":1}");
    write_atomically(out_ / "run.json", "{\"a\":2}");
    EXPECT_EQ(slurp(out_ / "run.json"), "{\"a\":2}");
    std::size_t n = 0;
    for ([[maybe_unused]] const auto &e : stdfs::directory_iterator(out_)) ++n;
    EXPECT_EQ(n, 1U);
}

}  // namespace
}  // namespace tea::files
