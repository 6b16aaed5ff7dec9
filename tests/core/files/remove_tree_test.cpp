// Removing a call's private directories after a target had them: whatever it left (read-only
// directories, links to the host, a tree deeper than PATH_MAX) goes, and nothing a link points to.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "files/private_dirs.hpp"
#include "support/temp_dir.hpp"

namespace tea::files {
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

// Runs `walk` on a thread and, when the walk opens the directory `watched`, moves `watched` to
// `to` before the open returns: a fanotify permission event holds the opener until it is
// answered. So the walk is inside a directory that is no longer where it came down, and its
// ".." is `to`'s parent. Returns whether the move happened during the walk. Needs
// CAP_SYS_ADMIN; `skip` says why not when it is missing.
bool move_when_opened(const stdfs::path &watched, const stdfs::path &to,
                      const std::function<void()> &walk, std::string &skip) {
    const int group = ::fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY | O_CLOEXEC);
    if (group < 0) {
        skip = std::string{"fanotify permission events are not available: "} + strerror(errno);
        return false;
    }
    if (::fanotify_mark(group, FAN_MARK_ADD, FAN_OPEN_PERM | FAN_ONDIR, AT_FDCWD,
                        watched.c_str()) != 0) {
        skip = std::string{"fanotify_mark: "} + strerror(errno);
        ::close(group);
        return false;
    }
    std::thread walker{walk};
    bool moved = false;
    pollfd pfd{group, POLLIN, 0};
    if (::poll(&pfd, 1, 10000) == 1) {
        alignas(fanotify_event_metadata) char buffer[4096];
        const auto n = ::read(group, buffer, sizeof buffer);
        if (n >= static_cast<ssize_t>(sizeof(fanotify_event_metadata))) {
            const auto *event = reinterpret_cast<const fanotify_event_metadata *>(buffer);
            std::error_code ec;
            stdfs::rename(watched, to, ec);
            moved = !ec;
            const fanotify_response allow{event->fd, FAN_ALLOW};
            EXPECT_EQ(::write(group, &allow, sizeof allow), static_cast<ssize_t>(sizeof allow));
            ::close(event->fd);
        }
    }
    walker.join();
    ::close(group);
    return moved;
}

// remove_tree's walk without its check of "..": down by name, back up through "..", trusted.
void remove_trusting_dotdot(const stdfs::path &root) {
    int dir = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    std::vector<std::string> below;
    while (dir >= 0) {
        std::optional<std::string> sub;
        DIR *d = ::fdopendir(::dup(dir));
        while (const dirent *e = ::readdir(d)) {
            const std::string name = e->d_name;
            if (name == "." || name == "..") {
                continue;
            }
            if (e->d_type == DT_DIR) {
                sub = name;
                break;
            }
            ::unlinkat(dir, name.c_str(), 0);
        }
        ::closedir(d);
        const int next = sub ? ::openat(dir, sub->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                         : below.empty() ? -1
                                         : ::openat(dir, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ::close(dir);
        dir = next;
        if (sub) {
            below.push_back(*sub);
        } else if (dir >= 0) {
            ::unlinkat(dir, below.back().c_str(), AT_REMOVEDIR);
            below.pop_back();
        }
    }
}

// The tree run/a/b, with b moved out to host/b when `walk` opens it; see move_when_opened.
class RemoveTreeRace : public RemoveTree {
   protected:
    bool walk_while_b_moves_out(const std::function<void()> &walk) {
        stdfs::create_directories(tree_ / "a/b");
        std::ofstream{tree_ / "a/b/f"} << "f";
        return move_when_opened(tree_ / "a/b", outside_ / "b", walk, skip_);
    }
    std::string skip_;
};

// A directory moved out of the tree while the walk is inside it (by a process of the call that
// outlived it, say) must stop the walk: its ".." is now somewhere else, whose entries the walk
// would go on to remove.
TEST_F(RemoveTreeRace, ADirectoryMovedOutDuringTheWalkStopsItThere) {
    const bool moved = walk_while_b_moves_out([&] { remove_tree(tree_); });
    if (!skip_.empty()) {
        GTEST_SKIP() << skip_;
    }
    ASSERT_TRUE(moved) << "the walk never opened the watched directory";
    EXPECT_TRUE(stdfs::exists(outside_ / "keep"));
    EXPECT_TRUE(stdfs::exists(tree_ / "a"));  // stopped; a later run reclaims the rest
}

TEST_F(RemoveTreeRace, TheMoveInTheControlMakesAWalkTrustingDotDotRemoveHostFiles) {
    const bool moved = walk_while_b_moves_out([&] { remove_trusting_dotdot(tree_); });
    if (!skip_.empty()) {
        GTEST_SKIP() << skip_;
    }
    ASSERT_TRUE(moved);
    EXPECT_FALSE(stdfs::exists(outside_ / "keep"));
}

TEST_F(RemoveTree, AMissingTreeIsNothingToDo) {
    remove_tree(base_ / "missing");
    EXPECT_TRUE(stdfs::exists(outside_ / "keep"));
}

}  // namespace
}  // namespace tea::files
