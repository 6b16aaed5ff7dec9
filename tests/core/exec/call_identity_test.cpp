// Taking an identity of its own for each call from a range: held while the call runs, never shared,
// never one with an account or a process still running as it, and given back when the call ends.
#include "exec/call_identity.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace tea::exec {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kFirst = 2147418112;  // 0x7FFF0000: no account has these

class CallIdentityTest : public ::testing::Test {
   protected:
    void SetUp() override {
        if (::geteuid() != 0) {
            GTEST_SKIP() << "only root gives calls identities of their own";
        }
    }
    [[nodiscard]] fs::path locks() const { return dir_.path() / "identities"; }

   private:
    test::TempDir dir_{"tea-identities"};
};

// A process running as `uid` until it is killed.
pid_t run_as(uid_t uid) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (::setresgid(uid, uid, uid) == 0 && ::setresuid(uid, uid, uid) == 0) {
            ::pause();
        }
        ::_exit(1);
    }
    return pid;
}

TEST_F(CallIdentityTest, TwoCallsAtOnceNeverShareOneAndAnEndedCallsIsTakenAgain) {
    std::optional<CallIdentity> a{std::in_place, kFirst, kFirst + 3, locks()};
    const CallIdentity b{kFirst, kFirst + 3, locks()};
    EXPECT_EQ(a->uid(), kFirst);
    EXPECT_EQ(b.uid(), kFirst + 1);
    EXPECT_EQ(a->gid(), a->uid());
    const auto ended = a->uid();
    a.reset();
    const CallIdentity c{kFirst, kFirst + 3, locks()};
    EXPECT_EQ(c.uid(), ended);
    struct stat st {};
    ASSERT_EQ(::stat(locks().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777U, 0700U);
    EXPECT_EQ(st.st_uid, 0U);
}

TEST_F(CallIdentityTest, AnIdAProcessStillRunsAsIsPassedOver) {
    const pid_t left = run_as(kFirst + 8);
    // The positive control: the kernel's count sees it.
    ASSERT_TRUE([&] {
        for (int i = 0; i < 200; ++i) {
            if (processes_remain(kFirst + 8)) {
                return true;
            }
            ::usleep(10000);
        }
        return false;
    }()) << "the process of uid "
         << kFirst + 8 << " was never seen";
    {
        const CallIdentity taken{kFirst + 8, kFirst + 9, locks()};
        EXPECT_EQ(taken.uid(), kFirst + 9);
    }
    ::kill(left, SIGKILL);
    ::waitpid(left, nullptr, 0);
    EXPECT_FALSE(processes_remain(kFirst + 8));
    const CallIdentity again{kFirst + 8, kFirst + 9, locks()};
    EXPECT_EQ(again.uid(), kFirst + 8);
}

TEST_F(CallIdentityTest, AnIdWithAnAccountIsNeverTakenAndAFullRangeIsNamed) {
    // uid 1 has an account (daemon, on Debian); the other id is held by a call.
    const CallIdentity held{kFirst + 16, kFirst + 16, locks()};
    for (const auto &[first, last] :
         {std::pair{std::uint32_t{1}, std::uint32_t{1}}, std::pair{kFirst + 16, kFirst + 16}}) {
        try {
            const CallIdentity none{first, last, locks()};
            ADD_FAILURE() << "took " << none.uid();
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::no_confine);
            EXPECT_NE(std::string{e.what()}.find("uid_range (" + std::to_string(first) + "-" +
                                                 std::to_string(last) + ") is free"),
                      std::string::npos)
                << e.what();
        }
    }
}

TEST_F(CallIdentityTest, ALockDirectoryOthersCanWriteIsRefused) {
    fs::create_directories(locks());
    fs::permissions(locks(), fs::perms{0777});
    try {
        const CallIdentity none{kFirst, kFirst, locks()};
        ADD_FAILURE() << "took " << none.uid();
    } catch (const Error &e) {
        EXPECT_NE(std::string{e.what()}.find("is not root's alone"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace tea::exec
