// A run's private directory: made at once or with its first directory, and only ever asked to
// make directories of its own.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "files/private_dirs.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace tea::files {
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

// Whether some process holds dir/lock (the mark of a live owner).
bool lock_held(const stdfs::path &dir) {
    const UniqueFd lock{::open((dir / "lock").c_str(), O_RDONLY | O_CLOEXEC)};
    return lock && ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0;
}

std::vector<std::string> names(const stdfs::path &dir) {
    std::vector<std::string> out;
    for (const auto &entry : stdfs::directory_iterator{dir}) {
        out.push_back(entry.path().filename().string());
    }
    return out;
}

TEST(LockedDirectory, AppearsUnderItsNameWithItsLockAlreadyHeld) {
    const test::TempDir root{"tea-run-dir"};
    const auto dir = root.path() / "run-abc";
    {
        const UniqueFd lock = make_locked_directory(dir, 0711);
        ASSERT_TRUE(lock.valid());
        EXPECT_TRUE(lock_held(dir));
        EXPECT_EQ(names(root.path()), std::vector<std::string>{"run-abc"});  // no staging name
        struct stat st {};
        ASSERT_EQ(::stat(dir.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777, 0711U);  // the mode asked for, past the umask
        // A live owner's directory is never reclaimed.
        EXPECT_EQ(reclaim_unlocked(root.path(), "run-"), 0);
        EXPECT_TRUE(stdfs::exists(dir));
    }
    EXPECT_FALSE(lock_held(dir));
    EXPECT_EQ(reclaim_unlocked(root.path(), "run-"), 1);
    EXPECT_TRUE(names(root.path()).empty());
}

TEST(LockedDirectory, ANameAlreadyThereIsAnErrorAndStaysAsItWas) {
    const test::TempDir root{"tea-run-dir"};
    const auto dir = root.path() / "run-abc";
    stdfs::create_directory(dir);
    std::ofstream{dir / "planted"} << "x";
    EXPECT_THROW((void)make_locked_directory(dir, 0700), Error);
    EXPECT_EQ(names(dir), std::vector<std::string>{"planted"});
    EXPECT_EQ(names(root.path()), std::vector<std::string>{"run-abc"});  // no staging left
    // An empty directory planted under the name is not replaced either.
    const auto empty = root.path() / "run-def";
    stdfs::create_directory(empty);
    EXPECT_THROW((void)make_locked_directory(empty, 0700), Error);
    EXPECT_FALSE(stdfs::exists(empty / "lock"));
}

// A directory with a lock file nobody holds: what a process killed after its lock leaves.
void make_unheld(const stdfs::path &dir) {
    stdfs::create_directory(dir);
    std::ofstream{dir / "lock"}.close();
}

// A directory whose lock a live owner (this test) holds for as long as the returned descriptor.
UniqueFd make_held(const stdfs::path &dir) {
    stdfs::create_directory(dir);
    return take_lock(dir);
}

TEST(LockedDirectory, AStagingNameAKillLeftIsReclaimedLikeTheName) {
    const test::TempDir root{"tea-run-dir"};
    // Killed after its lock: no holder, reclaimed once no maker is at work (a maker between
    // making the lock file and taking it looks the same).
    const auto unheld = root.path() / ".run-unheld";
    make_unheld(unheld);
    // Killed between its mkdir and its lock: spared while a maker is at work, who may own it...
    const auto young = root.path() / ".run-young";
    stdfs::create_directory(young);
    const UniqueFd maker{::open(root.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    ASSERT_EQ(::flock(maker.get(), LOCK_SH), 0);
    // ...and reclaimed once older than that.
    const auto old = root.path() / ".run-old";
    stdfs::create_directory(old);
    const timespec long_ago[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, old.c_str(), long_ago, 0), 0);
    // A live owner's staging name, and another prefix's, are left.
    const auto held = root.path() / ".run-held";
    const UniqueFd holder = make_held(held);
    ASSERT_TRUE(holder.valid());
    const auto other = root.path() / ".other-unheld";
    make_unheld(other);

    // Killed while being removed: its lock file may be gone already; nobody wants it back...
    const auto removing = root.path() / ".removed-run-x";
    stdfs::create_directory(removing);
    // ...unless a live remover still holds its lock.
    const auto live_removal = root.path() / ".removed-run-y";
    const UniqueFd remover = make_held(live_removal);
    ASSERT_TRUE(remover.valid());

    EXPECT_EQ(reclaim_unlocked(root.path(), "run-"), 2);
    EXPECT_FALSE(stdfs::exists(removing));
    EXPECT_TRUE(stdfs::exists(live_removal));
    EXPECT_TRUE(stdfs::exists(unheld));
    EXPECT_FALSE(stdfs::exists(old));
    EXPECT_TRUE(stdfs::exists(young));
    EXPECT_TRUE(stdfs::exists(held));
    EXPECT_TRUE(stdfs::exists(other));

    // With no maker at work, a name without its lock is a killed maker's: no grace to wait out.
    ASSERT_EQ(::flock(maker.get(), LOCK_UN), 0);
    EXPECT_EQ(reclaim_unlocked(root.path(), "run-"), 2);
    EXPECT_FALSE(stdfs::exists(young));
    EXPECT_FALSE(stdfs::exists(unheld));
    EXPECT_TRUE(stdfs::exists(held));
    EXPECT_TRUE(stdfs::exists(live_removal));
}

// A process killed at any point of making its run directory leaves no name the next run must
// spare: the name shows only with its lock held, the lock dies with the process, and a staging
// name killed before its lock is known dead once no maker is at work.
TEST(LockedDirectory, AKillAtAnyMomentLeavesNoNameTheNextRunSpares) {
    const test::TempDir root{"tea-run-dir"};
    int reclaimed = 0;
    for (int round = 0; round < 200; ++round) {
        std::array<int, 2> started{};
        ASSERT_EQ(::pipe2(started.data(), O_CLOEXEC), 0);
        const pid_t child = ::fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            ::close(started[0]);
            for (bool told = false;; told = true) {
                RunDirectory run{root.path()};
                run.remove();
                if (!told) {
                    // Only once the loop runs: a slow start (a sanitizer's fork) would otherwise
                    // take every kill before the first directory.
                    (void)!::write(started[1], "x", 1);
                }
            }
        }
        ::close(started[1]);
        char byte = 0;
        ASSERT_EQ(::read(started[0], &byte, 1), 1);
        ::close(started[0]);
        // Kill it at a moment spread over the loop's period.
        const timespec pause{0, 20'000L * (round % 15)};
        ::nanosleep(&pause, nullptr);
        ::kill(child, SIGKILL);
        ::waitpid(child, nullptr, 0);
        reclaimed += reclaim_leftovers(root.path());
        for (const auto &name : names(root.path())) {
            ADD_FAILURE() << name << " left at round " << round;
        }
        for (const auto &name : names(root.path())) {
            stdfs::remove_all(root.path() / name);
        }
    }
    // The kills did land while a directory existed (not only between two of them).
    EXPECT_GT(reclaimed, 0);
}

}  // namespace
}  // namespace tea::files
