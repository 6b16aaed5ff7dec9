// A run's private directory: made at once or with its first directory, and only ever asked to
// make directories of its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "fs/private_dirs.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace tea::fs {
namespace {

namespace stdfs = std::filesystem;

bool empty_dir(const stdfs::path &p) {
    return stdfs::is_empty(p);
}

TEST(RunDirectory, MadeAtOnceByDefault) {
    const test::TempDir root{"tea-run-dir"};
    RunDirectory run{root.path()};
    EXPECT_TRUE(run.made());
    EXPECT_TRUE(stdfs::is_directory(run.path()));
    EXPECT_TRUE(stdfs::exists(run.path() / "lock"));
    run.remove();
    EXPECT_TRUE(empty_dir(root.path()));
}

TEST(RunDirectory, NamesCostNothingOnTheHostUntilADirectoryIsMade) {
    const test::TempDir root{"tea-run-dir"};
    {
        RunDirectory run{root.path(), RunDirectory::Creation::with_first_directory};
        const auto tmp = run.name_directory("tmp-");
        const auto home = run.name_directory("tea-evaluate-target-home-");
        EXPECT_EQ(tmp.parent_path(), run.path());
        EXPECT_NE(tmp, run.name_directory("tmp-"));
        EXPECT_FALSE(run.made());
        // Nothing on the host, and nothing to remove when the run ends.
        EXPECT_TRUE(empty_dir(root.path()));
        run.make_named(home);
        EXPECT_TRUE(run.made());
        EXPECT_TRUE(stdfs::is_directory(home));
        EXPECT_TRUE(stdfs::exists(run.path() / "lock"));
        EXPECT_FALSE(stdfs::exists(tmp));
        // A second request for the same directory (a call prepared again) makes nothing twice.
        EXPECT_NO_THROW(run.make_named(home));
    }
    EXPECT_TRUE(empty_dir(root.path()));
    {
        RunDirectory unused{root.path(), RunDirectory::Creation::with_first_directory};
        (void)unused.name_directory("tmp-");
    }
    EXPECT_TRUE(empty_dir(root.path()));
}

TEST(RunDirectory, MakesNothingOutsideItself) {
    const test::TempDir root{"tea-run-dir"};
    RunDirectory run{root.path(), RunDirectory::Creation::with_first_directory};
    const auto sibling = root.path() / "elsewhere";
    for (const auto &wrong :
         {sibling, run.path() / "a" / "b", run.path() / "..", run.path() / ".", run.path() / "lock",
          stdfs::path{"/etc/tea-run-dir-test"}, run.path()}) {
        EXPECT_THROW(run.make_named(wrong), Error) << wrong;
    }
    EXPECT_FALSE(run.made());
    EXPECT_TRUE(empty_dir(root.path()));
    // A directory already there (not this run's) is an error, never adopted.
    run.make_named(run.name_directory("x-"));
    const auto planted = run.path() / "planted";
    stdfs::create_directory(planted);
    EXPECT_THROW(run.make_named(planted), Error);
}

}  // namespace
}  // namespace tea::fs
