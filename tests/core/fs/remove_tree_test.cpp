// Removing a call's private directories after a target had them: whatever it left (read-only
// directories, links to the host, a tree deeper than PATH_MAX) goes, and nothing a link points to.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fs/private_dirs.hpp"
#include "support/temp_dir.hpp"

namespace tea::fs {
namespace {

namespace stdfs = std::filesystem;

class RemoveTree : public ::testing::Test {
   protected:
    void SetUp() override {
        base_ = tmp_.path();
        tree_ = base_ / "run";
        stdfs::create_directories(tree_);
        outside_ = base_ / "host";
        stdfs::create_directories(outside_);
        std::ofstream{outside_ / "keep"} << "host file";
    }
    test::TempDir tmp_{"tea-remove"};
    stdfs::path base_, tree_, outside_;
};

TEST_F(RemoveTree, RemovesNestedDirectoriesAndFiles) {
    stdfs::create_directories(tree_ / "home/.cache/pip");
    stdfs::create_directories(tree_ / "tmp-x");
    std::ofstream{tree_ / "lock"} << "";
    std::ofstream{tree_ / "home/.cache/pip/wheel"} << "w";
    for (int i = 0; i < 3000; ++i) {  // more than one getdents batch
        std::ofstream{tree_ / "tmp-x" / ("file-" + std::to_string(i))} << i;
    }
    remove_tree(tree_);
    EXPECT_FALSE(stdfs::exists(tree_));
    EXPECT_TRUE(stdfs::exists(base_));
}

TEST_F(RemoveTree, RemovesWhatATargetMadeReadOnlyOrUnsearchable) {
    stdfs::create_directories(tree_ / "a/b");
    std::ofstream{tree_ / "a/b/f"} << "f";
    stdfs::create_directories(tree_ / "c");
    std::ofstream{tree_ / "c/g"} << "g";
    ASSERT_EQ(::chmod((tree_ / "a/b").c_str(), 0500), 0);
    ASSERT_EQ(::chmod((tree_ / "a").c_str(), 0), 0);
    ASSERT_EQ(::chmod((tree_ / "c").c_str(), 0100), 0);
    remove_tree(tree_);
    EXPECT_FALSE(stdfs::exists(tree_));
}

TEST_F(RemoveTree, NeverFollowsALinkOutOfTheTree) {
    stdfs::create_directories(tree_ / "home");
    stdfs::create_directory_symlink(outside_, tree_ / "home/escape");
    stdfs::create_symlink(outside_ / "keep", tree_ / "home/file-link");
    remove_tree(tree_);
    EXPECT_FALSE(stdfs::exists(tree_));
    EXPECT_TRUE(stdfs::exists(outside_ / "keep"));  // control below: the link did lead there
}

TEST_F(RemoveTree, TheLinkInTheControlDoesLeadToTheHostFile) {
    stdfs::create_directory_symlink(outside_, tree_ / "escape");
    EXPECT_TRUE(stdfs::exists(tree_ / "escape" / "keep"));
}

TEST_F(RemoveTree, ALinkGivenAsTheTreeIsRemovedNotFollowed) {
    const auto link = base_ / "link";
    stdfs::create_directory_symlink(outside_, link);
    remove_tree(link);
    EXPECT_FALSE(stdfs::is_symlink(link));
    EXPECT_TRUE(stdfs::exists(outside_ / "keep"));
}

TEST_F(RemoveTree, RemovesATreeDeeperThanPathMax) {
    // 3000 levels of "dd/" make a path of 9000 bytes, past PATH_MAX (4096): only descriptors
    // reach the bottom.
    int dir = ::open(tree_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dir, 0);
    for (int i = 0; i < 3000; ++i) {
        ASSERT_EQ(::mkdirat(dir, "dd", 0700), 0) << i;
        const int next = ::openat(dir, "dd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_GE(next, 0);
        ::close(dir);
        dir = next;
    }
    const int file = ::openat(dir, "bottom", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(file, 0);
    ::close(file);
    ::close(dir);
    remove_tree(tree_);
    EXPECT_FALSE(stdfs::exists(tree_));
}

TEST_F(RemoveTree, AMissingTreeIsNothingToDo) {
    remove_tree(base_ / "missing");
    EXPECT_TRUE(stdfs::exists(outside_ / "keep"));
}

}  // namespace
}  // namespace tea::fs
