// Who may have written a file a root runtime loads code from (core/plugins/trust.hpp): real files
// and folders with the owners and modes an attacker would leave, each refusal beside the same
// layout with root's owners and modes, which opens.
#include "plugins/trust.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <tea/read_all.hpp>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::plugins {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr TrustPolicy as_root{true, 0};

class Trust : public ::testing::Test {
   protected:
    void SetUp() override {
        if (::geteuid() != 0) {
            GTEST_SKIP() << "making files of another owner needs root";
        }
        fs::permissions(dir_.path(), fs::perms{0755});
    }

    fs::path file(const std::string &name, unsigned mode, uid_t owner = 0) const {
        const auto path = dir_.path() / name;
        fs::create_directories(path.parent_path());
        test::write_file(path.string(), "content of " + name);
        set(path, mode, owner);
        return path;
    }
    fs::path folder(const std::string &name, unsigned mode, uid_t owner = 0) const {
        const auto path = dir_.path() / name;
        fs::create_directories(path);
        set(path, mode, owner);
        return path;
    }
    static void set(const fs::path &path, unsigned mode, uid_t owner) {
        ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
        ASSERT_EQ(::lchown(path.c_str(), owner, owner), 0) << path;
    }

    // The refusal's sentence, or "" when the file opened.
    static std::string refusal(const fs::path &path, const TrustPolicy &policy = as_root) {
        try {
            (void)open_trusted(path, policy);
            return {};
        } catch (const std::runtime_error &e) {
            return e.what();
        }
    }
    static std::string content(const fs::path &path, const TrustPolicy &policy = as_root) {
        return read_all(open_trusted(path, policy).get());
    }

    test::TempDir dir_{"tea-trust"};
};

TEST_F(Trust, OpensARootFileInRootFolders) {
    const auto f = file("a/m.toml", 0644);
    folder("a", 0755);
    EXPECT_EQ(content(f), "content of a/m.toml");
}

// Another member of the group, or any user, could rewrite the file.
TEST_F(Trust, RefusesAFileOthersMayWrite) {
    const auto group = file("g.toml", 0664);
    EXPECT_THAT(refusal(group),
                HasSubstr(group.string() + ": not loaded as root: it is writable by its group "
                                           "(mode 0664)"));
    const auto world = file("w.toml", 0646);
    EXPECT_THAT(refusal(world), HasSubstr("it is writable by every user (mode 0646)"));
    // Control: the same files, writable by root alone.
    set(group, 0644, 0);
    set(world, 0644, 0);
    EXPECT_EQ(refusal(group), "");
    EXPECT_EQ(refusal(world), "");
}

// Its owner may change it, whatever its mode says today.
TEST_F(Trust, RefusesAFileOfAnotherOwner) {
    const auto theirs = file("t.toml", 0444, test::kNobody);
    EXPECT_THAT(refusal(theirs), HasSubstr("it is owned by uid 65534"));
}

// Whoever may write a folder on the way may rename another file over the one that was checked.
TEST_F(Trust, RefusesAPathThroughAFolderOthersMayChange) {
    const auto f = file("open/inner/m.toml", 0644);
    folder("open/inner", 0755);
    const auto open = folder("open", 0775);
    EXPECT_THAT(refusal(f), HasSubstr(open.string() + " is writable by its group (mode 0775)"));
    set(open, 0755, test::kNobody);
    EXPECT_THAT(refusal(f), HasSubstr(open.string() + " is owned by uid 65534"));
    set(open, 0755, 0);
    EXPECT_EQ(refusal(f), "");
}

// A sticky folder (such as /tmp) lets others add names but not replace root's: it may lie on the
// way, as long as what the walk takes in it is root's.
TEST_F(Trust, AcceptsAStickyFolderOnlyForRootsEntries) {
    folder("sticky", 01777);
    folder("sticky/root", 0755);
    const auto f = file("sticky/root/m.toml", 0644);
    EXPECT_EQ(refusal(f), "");
    const auto theirs = folder("sticky/theirs", 0755, test::kNobody);
    const auto g = file("sticky/theirs/m.toml", 0644);
    EXPECT_THAT(refusal(g), HasSubstr(theirs.string() + " is owned by uid 65534"));
    // Without the sticky bit, the same folder lets anyone replace root's entry.
    folder("sticky", 0757);
    EXPECT_THAT(refusal(f), HasSubstr("sticky is writable by every user (mode 0757)"));
}

// A link is judged by every folder it leads through, and by its own owner (who may replace it
// in a sticky folder).
TEST_F(Trust, FollowsLinksAndChecksWhereTheyLead) {
    const auto target = file("real/m.toml", 0644);
    folder("real", 0755);
    folder("links", 0755);
    const auto absolute = dir_.path() / "links/absolute.toml";
    fs::create_symlink(target, absolute);
    EXPECT_EQ(content(absolute), "content of real/m.toml");
    const auto relative = dir_.path() / "links/relative.toml";
    fs::create_symlink("../real/./m.toml", relative);
    EXPECT_EQ(content(relative), "content of real/m.toml");

    set(dir_.path() / "real", 0755, test::kNobody);
    EXPECT_THAT(refusal(absolute), HasSubstr((dir_.path() / "real").string() + " is owned by"));
    EXPECT_THAT(refusal(relative), HasSubstr((dir_.path() / "real").string() + " is owned by"));
    set(dir_.path() / "real", 0755, 0);

    const auto theirs = dir_.path() / "links/theirs.toml";
    fs::create_symlink(target, theirs);
    ASSERT_EQ(::lchown(theirs.c_str(), test::kNobody, test::kNobody), 0);
    EXPECT_THAT(refusal(theirs), HasSubstr(theirs.string() + ": not loaded as root: it is owned"));

    const auto loop = dir_.path() / "links/loop.toml";
    fs::create_symlink(loop, loop);
    EXPECT_THAT(refusal(loop), HasSubstr("more than 40 symbolic links"));
}

TEST_F(Trust, RefusesWhatIsNoRegularFile) {
    const auto d = folder("d.toml", 0755);
    EXPECT_THAT(refusal(d), HasSubstr("is not a regular file"));
    const auto fifo = dir_.path() / "fifo.toml";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    EXPECT_THAT(refusal(fifo), HasSubstr("is not a regular file"));
    EXPECT_THAT(refusal(dir_.path() / "missing.toml"), HasSubstr("cannot be examined"));
}

// The rules of a runtime that is not root: its own files, whoever else may write them.
TEST_F(Trust, WithoutTheRequirementAnyReadableFileOpens) {
    folder("open", 0777);
    const auto f = file("open/m.toml", 0666, test::kNobody);
    EXPECT_EQ(content(f, TrustPolicy{false, 0}), "content of open/m.toml");
    EXPECT_NE(refusal(f), "");
}

}  // namespace
}  // namespace tea::plugins
