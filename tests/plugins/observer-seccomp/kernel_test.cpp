// The seccomp observer against real processes, outside any sandbox, through the real plugin's
// table, with the strace observer's answer for the same process as the reference: a path buffer
// flipped while another thread opens it, opens through /proc/self/fd and /dev/fd, execveat, the
// i386 and x32 ABIs and io_uring (refused), a path in a page never touched, a fork storm, a
// process that outlives the call, O_CREAT, and the same as an unprivileged user. The audit under
// bwrap, observer by observer: observer-strace/audit_test.cpp.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tea/documents.hpp>
#include <vector>

#include "../observer_plugin.hpp"
#include "audit/observation.hpp"
#include "plugins/loader.hpp"
#include "plugins/manifest.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::plugins {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

// The uid the unprivileged runs take (nobody).
constexpr int kNobody = 65534;

class SeccompObserved : public ::testing::Test {
   protected:
    static void SetUpTestSuite() {
        seccomp_ = new ObserverPlugin{"seccomp", TEA_SECCOMP_PLUGIN};
        strace_ = new ObserverPlugin{"strace", TEA_STRACE_PLUGIN};
    }
    static void TearDownTestSuite() {
        delete seccomp_;
        delete strace_;
    }

    void SetUp() override {
        ASSERT_TRUE(seccomp_->probe().available) << seccomp_->probe().reason;
        ASSERT_TRUE(strace_->probe().available) << strace_->probe().reason;
        // Readable by the unprivileged runs too.
        ::chmod(dir_.path().c_str(), 0755);
        file_ = dir_.path() / "file-A";
        std::ofstream{file_} << "content of A\n";
        ::chmod(file_.c_str(), 0644);
    }

    static Observed seccomp(const std::vector<std::string> &args, bool as_nobody = false) {
        return run(*seccomp_, args, as_nobody);
    }
    static Observed strace(const std::vector<std::string> &args) { return run(*strace_, args); }
    static Observed seccomp_shell(const std::string &script) {
        return seccomp_->observe({"/bin/sh", "-c", script});
    }
    static Observed strace_shell(const std::string &script) {
        return strace_->observe({"/bin/sh", "-c", script});
    }
    static Observed plain(const std::vector<std::string> &args) {
        Observed out;
        std::vector<std::string> argv{TEA_SECCOMP_KERNEL_PROBE};
        argv.insert(argv.end(), args.begin(), args.end());
        out.outcome = test::run(argv, {"PATH=/usr/bin:/bin", "LANG=C"});
        return out;
    }

    static std::uint64_t accesses_of(const audit::Observation &o, const std::string &path,
                                     audit::Access access) {
        std::uint64_t n = 0;
        for (std::size_t i = 0; i < o.events.size(); ++i) {
            const auto &e = o.events[i];
            if (e.success && e.access == access && e.path_resolved == path) {
                n += o.counts[i];
            }
        }
        return n;
    }
    static std::uint64_t reads_of(const audit::Observation &o, const std::string &path) {
        return accesses_of(o, path, audit::Access::read);
    }

    test::TempDir dir_{"tea-seccomp-files"};
    stdfs::path file_;

   private:
    static Observed run(const ObserverPlugin &o, const std::vector<std::string> &args,
                        bool as_nobody = false) {
        std::vector<std::string> argv{TEA_SECCOMP_KERNEL_PROBE};
        argv.insert(argv.end(), args.begin(), args.end());
        if (!as_nobody) {
            return o.observe(argv);
        }
        return o.observe(
            argv, {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}, kNobody);
    }

    static ObserverPlugin *seccomp_;
    static ObserverPlugin *strace_;
};

ObserverPlugin *SeccompObserved::seccomp_ = nullptr;
ObserverPlugin *SeccompObserved::strace_ = nullptr;

TEST_F(SeccompObserved, AnOpenIsReportedByTheFileItReached) {
    for (const auto &[name, seen] : {std::pair{"seccomp", seccomp({"open", file_})},
                                     std::pair{"strace", strace({"open", file_})}}) {
        EXPECT_EQ(seen.outcome.out, "content of A\n") << name << seen.outcome.err;
        EXPECT_TRUE(seen.observation.complete) << name << ": " << seen.observation.reason;
        EXPECT_TRUE(seen.observation.target_started) << name;
        EXPECT_EQ(reads_of(seen.observation, file_), 1U) << name;
    }
}

TEST_F(SeccompObserved, AnUnprivilegedCallIsObservedAlike) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "switching to an unprivileged uid needs root";
    }
    const auto seen = seccomp({"open", file_}, true);
    EXPECT_EQ(seen.outcome.out, "content of A\n") << seen.outcome.err;
    EXPECT_TRUE(seen.observation.complete) << seen.observation.reason;
    EXPECT_EQ(reads_of(seen.observation, file_), 1U);
    // The open is made as the process's identity: a file it may not read stays unread.
    const auto secret = dir_.path() / "secret";
    std::ofstream{secret} << "secret\n";
    ::chmod(secret.c_str(), 0600);
    const auto refused = seccomp({"open", secret}, true);
    EXPECT_EQ(refused.outcome.out, "");
    EXPECT_NE(refused.outcome.err.find("Permission denied"), std::string::npos)
        << refused.outcome.err;
    EXPECT_EQ(reads_of(refused.observation, secret), 0U);
    // The control: root reads it under the same observer.
    EXPECT_EQ(seccomp({"open", secret}).outcome.out, "secret\n");
}

TEST_F(SeccompObserved, AnOpenWhoseNumberHasHighBitsSetIsReported) {
    const auto seen = seccomp({"highbits", file_});
    EXPECT_EQ(seen.outcome.out, "content of A\n") << seen.outcome.err;
    EXPECT_EQ(reads_of(seen.observation, file_), 1U);
}

// A thread flips the last byte of the path buffer while the other opens it: every open the
// observer reports is the file the process got, checked against the inodes the probe saw.
TEST_F(SeccompObserved, APathBufferFlippedDuringTheOpenNeverLies) {
    const auto other = dir_.path() / "file-B";
    std::ofstream{other} << "content of B\n";
    for (const auto &[name, seen] :
         {std::pair{"seccomp", seccomp({"racer", file_, other, "3000"})},
          std::pair{"strace", strace({"racer", file_, other, "3000"})}}) {
        int reached_a = -1;
        int reached_b = -1;
        int failed = -1;
        ASSERT_EQ(std::sscanf(seen.outcome.out.c_str(), "a=%d b=%d other=%d", &reached_a,
                              &reached_b, &failed),
                  3)
            << name << ": " << seen.outcome.out << seen.outcome.err;
        // The control: the race was live, the same buffer reached both files.
        EXPECT_GT(reached_a, 0) << name;
        EXPECT_GT(reached_b, 0) << name;
        EXPECT_TRUE(seen.observation.complete) << name << ": " << seen.observation.reason;
        EXPECT_EQ(reads_of(seen.observation, file_), static_cast<std::uint64_t>(reached_a)) << name;
        EXPECT_EQ(reads_of(seen.observation, other), static_cast<std::uint64_t>(reached_b)) << name;
    }
}

TEST_F(SeccompObserved, AnOpenThroughProcSelfFdIsTheFileBehindIt) {
    for (const auto &[name, seen] : {std::pair{"seccomp", seccomp({"procfd", file_})},
                                     std::pair{"strace", strace({"procfd", file_})}}) {
        EXPECT_EQ(seen.outcome.out, "content of A\n") << name << ": " << seen.outcome.err;
        EXPECT_EQ(reads_of(seen.observation, file_), 1U) << name;
    }
    // An O_PATH open alone reads nothing.
    const auto opath = seccomp({"opath", file_});
    EXPECT_EQ(opath.outcome.status, 0) << opath.outcome.err;
    EXPECT_EQ(reads_of(opath.observation, file_), 0U);
}

TEST_F(SeccompObserved, AnOpenThroughDevFdAndDevStdinIsTheFileBehindIt) {
    const std::string script =
        "exec 3<'" + file_.string() + "'; cat /dev/fd/3; cat /dev/stdin <'" + file_.string() + "'";
    for (const auto &[name, seen] :
         {std::pair{"seccomp", seccomp_shell(script)}, std::pair{"strace", strace_shell(script)}}) {
        EXPECT_EQ(seen.outcome.out, "content of A\ncontent of A\n")
            << name << ": " << seen.outcome.err;
        EXPECT_TRUE(seen.observation.complete) << name << ": " << seen.observation.reason;
        // The shell's two opens, and cat's through /dev/fd/3 and /dev/stdin.
        EXPECT_EQ(reads_of(seen.observation, file_), 4U) << name;
    }
}

TEST_F(SeccompObserved, ExecveatOfADescriptorIsJudgedByTheFileItRan) {
    const auto program = stdfs::canonical("/bin/true").string();
    const auto execs_of = [&program](const audit::Observation &o) {
        std::uint64_t n = 0;
        for (const auto &e : o.events) {
            const auto &decides = e.path_resolved.empty() ? e.path_asked : e.path_resolved;
            if (e.access == audit::Access::exec && e.success && decides == program) {
                ++n;
            }
        }
        return n;
    };
    const auto seen = seccomp({"execveat", program});
    EXPECT_EQ(seen.outcome.status, 0) << seen.outcome.err;
    EXPECT_TRUE(seen.observation.complete) << seen.observation.reason;
    EXPECT_EQ(execs_of(seen.observation), 1U);
    EXPECT_EQ(execs_of(strace({"execveat", program}).observation), 1U);
}

// The i386 and x32 ABIs and io_uring answer ENOSYS under the observer: nothing is opened that it
// would not see. The control: without it (and under strace) the same probe opens the file where
// the kernel offers the ABI.
TEST_F(SeccompObserved, OtherAbisAndIoUringAreRefused) {
    for (const char *mode : {"int80", "x32", "io_uring"}) {
        const auto seen = seccomp({mode, file_});
        EXPECT_EQ(seen.outcome.out, "") << mode << ": nothing was read";
        // (int80 prints the raw answer's errno, which the i386 call leaves unset.)
        EXPECT_NE(seen.outcome.err.find("open:"), std::string::npos)
            << mode << ": " << seen.outcome.err;
        EXPECT_EQ(reads_of(seen.observation, file_), 0U) << mode;
        const auto control = plain({mode, file_});
        if (control.outcome.out == "content of A\n") {
            continue;  // the kernel offers it: the observer's refusal is what stopped it
        }
        std::cerr << mode << ": this kernel does not offer it (" << control.outcome.err
                  << "); the control is vacuous here\n";
    }
    // The positive control of the refusal itself: a plain open under the same observer reads.
    EXPECT_EQ(seccomp({"open", file_}).outcome.out, "content of A\n");
}

// open_by_handle_at names a file with no path to resolve in the process's root: refused (EPERM,
// as the kernel answers a process without CAP_DAC_READ_SEARCH). The control: without the
// observer, root opens the same file by its handle.
TEST_F(SeccompObserved, AnOpenByHandleIsRefused) {
    const auto seen = seccomp({"handle", file_});
    EXPECT_EQ(seen.outcome.out, "") << seen.outcome.err;
    EXPECT_NE(seen.outcome.err.find("Operation not permitted"), std::string::npos)
        << seen.outcome.err;
    EXPECT_EQ(reads_of(seen.observation, file_), 0U);
    if (::geteuid() == 0) {
        EXPECT_EQ(plain({"handle", file_}).outcome.out, "content of A\n");
    }
}

TEST_F(SeccompObserved, APathInAPageNeverTouchedIsReported) {
    for (const auto &[name, seen] : {std::pair{"seccomp", seccomp({"unfaulted", file_})},
                                     std::pair{"strace", strace({"unfaulted", file_})}}) {
        EXPECT_EQ(seen.outcome.out, "content of A\n") << name << ": " << seen.outcome.err;
        EXPECT_TRUE(seen.observation.complete) << name << ": " << seen.observation.reason;
        EXPECT_EQ(reads_of(seen.observation, file_), 1U) << name;
    }
}

TEST_F(SeccompObserved, AForkStormIsSeenWhole) {
    const auto seen = seccomp({"storm", file_, "200"});
    EXPECT_EQ(seen.outcome.out, "read=200\n") << seen.outcome.err;
    EXPECT_TRUE(seen.observation.complete) << seen.observation.reason;
    EXPECT_EQ(reads_of(seen.observation, file_), 200U);
    EXPECT_EQ(reads_of(strace({"storm", file_, "200"}).observation, file_), 200U);
}

TEST_F(SeccompObserved, AProcessThatOutlivesTheCallMakesItIncomplete) {
    const auto seen = seccomp({"outlive", file_});
    const int child = std::atoi(seen.outcome.out.c_str());
    ASSERT_GT(child, 0) << seen.outcome.out << seen.outcome.err;
    ::kill(child, SIGKILL);
    EXPECT_FALSE(seen.observation.complete);
    EXPECT_NE(seen.observation.reason.find("still running"), std::string::npos)
        << seen.observation.reason;
    EXPECT_EQ(reads_of(seen.observation, file_), 1U) << "what it did before the end is kept";
    // The control: a call whose processes all end is complete.
    EXPECT_TRUE(seccomp({"open", file_}).observation.complete);
}

TEST_F(SeccompObserved, AnOpenThatCreatesIsReportedAsCreated) {
    const auto made = dir_.path() / "made";
    const auto seen =
        seccomp_shell("echo x > '" + made.string() + "' && cat '" + made.string() + "'");
    EXPECT_EQ(seen.outcome.out, "x\n") << seen.outcome.err;
    EXPECT_EQ(accesses_of(seen.observation, made, audit::Access::create), 1U);
    EXPECT_EQ(reads_of(seen.observation, made), 1U);
}

// The open of a FIFO waits for its other end; the supervisor serves the other processes of the
// call meanwhile (a worker makes the blocking open), so the writer can come.
TEST_F(SeccompObserved, AnOpenThatBlocksDoesNotStopTheCall) {
    const auto fifo = dir_.path() / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    const std::string script =
        "(sleep 0.2; echo through > '" + fifo.string() + "') & cat '" + fifo.string() + "'; wait";
    for (const auto &[name, seen] :
         {std::pair{"seccomp", seccomp_shell(script)}, std::pair{"strace", strace_shell(script)}}) {
        EXPECT_EQ(seen.outcome.out, "through\n") << name << ": " << seen.outcome.err;
        EXPECT_TRUE(seen.observation.complete) << name << ": " << seen.observation.reason;
        EXPECT_EQ(reads_of(seen.observation, fifo), 1U) << name;
    }
}

TEST_F(SeccompObserved, AWrapForAStampRegistersNothing) {
    // wrap is a pure transform: a trace directory that does not exist gets a plan, and a collect
    // of it says the observer did not prepare it.
    const auto none = stdfs::path{"/nonexistent/tea-seccomp"};
    const ObserverPlugin fresh{"seccomp", TEA_SECCOMP_PLUGIN};
    EXPECT_NO_THROW((void)fresh.wrap({"true"}, none));
    EXPECT_FALSE(fresh.collect(none).complete);
}

}  // namespace
}  // namespace tea::plugins
