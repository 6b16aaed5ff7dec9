// The coordinator's lease (cli/coordinator_lease.hpp), judged as a task and a later run judge it:
// alive while it is renewed, gone at once when its process has ended on this kernel, gone by its
// age when it was made on another, and never taken for alive when what is in its place is no
// lease.
#include "cli/coordinator_lease.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "support/temp_dir.hpp"

namespace tea::cli {
namespace {

namespace fs = std::filesystem;
using Is = CoordinatorState::Is;

void write(const fs::path &file, const std::string &text) {
    std::ofstream{file, std::ios::binary} << text;
}

// The lease's modification time set `seconds` into the past.
void age(const fs::path &file, int seconds) {
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    timespec times[2] = {st.st_atim, st.st_mtim};
    times[1].tv_sec -= seconds;
    ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
}

TEST(CoordinatorLease, ALeaseRenewedIsAliveAndOneLeftUnrenewedPastItsLengthIsGone) {
    test::TempDir dir{"tea-lease"};
    const CoordinatorLease lease{dir.path(), 10};
    EXPECT_EQ(coordinator_state(dir.path()).is, Is::alive);
    // Its process lives (this one): only the age tells that it stopped renewing.
    age(dir / kLeaseFile, 60);
    const auto stale = coordinator_state(dir.path());
    EXPECT_EQ(stale.is, Is::gone);
    EXPECT_NE(stale.why.find("last renewed 60 s ago, longer than its 10 s"), std::string::npos)
        << stale.why;
    // Control: renewed, the same lease is alive again.
    lease.renew();
    EXPECT_EQ(coordinator_state(dir.path()).is, Is::alive);
    // The age is read without leaving a file behind.
    std::size_t files = 0;
    for ([[maybe_unused]] const auto &e : fs::directory_iterator{dir.path()}) ++files;
    EXPECT_EQ(files, 1U);
}

TEST(CoordinatorLease, TheLeaseGoesWithTheCoordinatorsWait) {
    test::TempDir dir{"tea-lease"};
    { const CoordinatorLease lease{dir.path(), 10}; }
    EXPECT_FALSE(fs::exists(dir / kLeaseFile));
    EXPECT_EQ(coordinator_state(dir.path()).is, Is::unknown);
}

// A coordinator killed outright: on the kernel it ran on, a fresh lease of an ended process is
// gone at once, not a lease later.
TEST(CoordinatorLease, AFreshLeaseOfAProcessThatEndedIsGoneAtOnce) {
    test::TempDir dir{"tea-lease"};
    int ready[2];
    int hold[2];
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(hold), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(hold[1]);
        // Made, then never removed: _exit runs no destructor, as SIGKILL would run none.
        const CoordinatorLease lease{dir.path(), 3600};
        (void)::write(ready[1], "x", 1);
        char c = 0;
        (void)::read(hold[0], &c, 1);
        ::_exit(0);
    }
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    // Control: while the child lives, its lease is alive.
    EXPECT_EQ(coordinator_state(dir.path()).is, Is::alive);
    ::close(hold[1]);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    const auto state = coordinator_state(dir.path());
    EXPECT_EQ(state.is, Is::gone);
    EXPECT_NE(state.why.find("has ended"), std::string::npos) << state.why;
    for (const int fd : {ready[0], ready[1], hold[0]}) ::close(fd);
}

// A lease made on another node (another boot id) cannot be looked up here: its age decides.
TEST(CoordinatorLease, ALeaseMadeOnAnotherNodeIsJudgedByItsAge) {
    test::TempDir dir{"tea-lease"};
    const auto file = dir / kLeaseFile;
    write(file, R"({"node":"n7","bootId":"not-this-boot","process":"4026531836-1-1","leaseS":30})");
    EXPECT_EQ(coordinator_state(dir.path()).is, Is::alive);
    age(file, 31);
    const auto state = coordinator_state(dir.path());
    EXPECT_EQ(state.is, Is::gone);
    EXPECT_NE(state.why.find("on node n7"), std::string::npos) << state.why;
}

// What stands where the lease should is never taken for a live coordinator.
TEST(CoordinatorLease, WhatIsNoLeaseIsNeverAlive) {
    test::TempDir dir{"tea-lease"};
    const auto file = dir / kLeaseFile;
    EXPECT_EQ(coordinator_state(dir.path()).is, Is::unknown);  // missing
    const std::string good = R"({"node":"n","bootId":"b","process":"1-1-1","leaseS":30})";
    // A link to a good lease elsewhere.
    write(dir / "elsewhere", good);
    fs::create_symlink(dir / "elsewhere", file);
    EXPECT_EQ(coordinator_state(dir.path()).is, Is::unknown);
    fs::remove(file);
    // A fifo (opened without blocking), a directory.
    ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
    EXPECT_EQ(coordinator_state(dir.path()).is, Is::unknown);
    fs::remove(file);
    fs::create_directory(file);
    EXPECT_EQ(coordinator_state(dir.path()).is, Is::unknown);
    fs::remove(file);
    for (const std::string &text :
         {std::string{"not json"}, std::string{R"({"node":"n","bootId":"b","process":"1-1-1"})"},
          std::string{R"({"node":"n","bootId":"b","process":"1-1-1","leaseS":9})"},
          std::string{R"({"node":"n","bootId":"b","process":"1-1-1","leaseS":86401})"},
          std::string{R"({"node":"n","bootId":"","process":"1-1-1","leaseS":30})"},
          std::string{R"({"node":"n","bootId":"b","process":7,"leaseS":30})"},
          std::string(5000, ' ') + good}) {
        write(file, text);
        EXPECT_EQ(coordinator_state(dir.path()).is, Is::unknown) << text.substr(0, 80);
    }
    // Control: the good lease in its place is alive.
    write(file, good);
    EXPECT_EQ(coordinator_state(dir.path()).is, Is::alive);
}

}  // namespace
}  // namespace tea::cli
