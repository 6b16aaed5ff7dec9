// The eBPF observer against real processes, outside any sandbox, through the real plugin's table,
// with the strace observer's answer for the same process as the reference: a path buffer flipped
// while another thread opens it, an open through /proc/self/fd, execveat, the i386 ABI and
// io_uring, a descriptor a sibling swaps under an open; and what the observer must never drop
// silently: an exec's loader, a path string it cannot read back, a full ring buffer, a process
// that outlives its call, and abandoned registrations. The audit under bwrap, observer by observer:
// observer-strace/audit_test.cpp.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tea/documents.hpp>
#include <vector>

#include "../observer_plugin.hpp"
#include "audit/observation.hpp"
#include "ebpf_event.h"
#include "observed.hpp"
#include "plugins/loader.hpp"
#include "plugins/manifest.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::plugins {
namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

class KernelObserved : public ::testing::Test {
   protected:
    static void SetUpTestSuite() {
        ebpf_ = new ObserverPlugin{"ebpf", TEA_EBPF_PLUGIN};
        strace_ = new ObserverPlugin{"strace", TEA_STRACE_PLUGIN};
    }
    static void TearDownTestSuite() {
        delete ebpf_;
        delete strace_;
    }

    void SetUp() override {
        if (::geteuid() != 0) {
            GTEST_SKIP() << "loading BPF programs needs root";
        }
        ASSERT_TRUE(ebpf_->probe().available) << ebpf_->probe().reason;
        ASSERT_TRUE(strace_->probe().available) << strace_->probe().reason;
        file_ = dir_.path() / "file-A";
        std::ofstream{file_} << "content of A\n";
    }

    static Observed ebpf(const std::vector<std::string> &args) { return run(*ebpf_, args); }
    static Observed ebpf_with(const ObserverPlugin &o, const std::vector<std::string> &args) {
        return run(o, args);
    }
    static const ObserverPlugin &ebpf_observer() { return *ebpf_; }
    static Observed strace(const std::vector<std::string> &args) { return run(*strace_, args); }

    // A file holding what file_ holds, under a path of about 3,000 bytes.
    [[nodiscard]] stdfs::path long_named_file() const {
        auto deep = dir_.path();
        for (int i = 0; i < 11; ++i) deep /= std::string(250, static_cast<char>('a' + i));
        stdfs::create_directories(deep);
        auto file = deep / "file";
        std::ofstream{file} << "content of A\n";
        return file;
    }

    test::TempDir dir_{"tea-ebpf-files"};
    stdfs::path file_;

   private:
    static Observed run(const ObserverPlugin &o, const std::vector<std::string> &args) {
        std::vector<std::string> argv{TEA_EBPF_KERNEL_PROBE};
        argv.insert(argv.end(), args.begin(), args.end());
        return o.observe(argv);
    }

    static ObserverPlugin *ebpf_;
    static ObserverPlugin *strace_;
};

ObserverPlugin *KernelObserved::ebpf_ = nullptr;
ObserverPlugin *KernelObserved::strace_ = nullptr;

TEST_F(KernelObserved, AnOpenIsReportedByTheFileItReached) {
    for (const auto &[name, seen] :
         {std::pair{"ebpf", ebpf({"open", file_})}, std::pair{"strace", strace({"open", file_})}}) {
        EXPECT_EQ(seen.outcome.out, "content of A\n") << name;
        EXPECT_TRUE(seen.observation.complete) << name << ": " << seen.observation.reason;
        EXPECT_EQ(reads_of(seen.observation, file_), 1U) << name;
    }
}

// The kernel keeps a name of under 40 bytes inside its dentry, and the programs copy it from
// there; a longer one they read where it points. Names on either side of that bound, as
// directories and as the file, are reported whole.
TEST_F(KernelObserved, NamesOnEitherSideOfTheInlineBoundAreReportedWhole) {
    const auto named = [](std::size_t length, char c) { return std::string(length, c); };
    auto deep = dir_.path() / named(39, 'a') / named(40, 'b') / named(41, 'c') / "d" /
                named(38, 'e') / named(200, 'f');
    stdfs::create_directories(deep);
    for (const auto length : {1U, 38U, 39U, 40U, 41U, 255U}) {
        const auto file = deep / named(length, 'g');
        std::ofstream{file} << "content of A\n";
        for (const auto &[name, seen] : {std::pair{"ebpf", ebpf({"open", file})},
                                         std::pair{"strace", strace({"open", file})}}) {
            EXPECT_EQ(seen.outcome.out, "content of A\n") << name << ": " << seen.outcome.err;
            EXPECT_TRUE(seen.observation.complete) << name << ": " << seen.observation.reason;
            EXPECT_EQ(reads_of(seen.observation, file), 1U) << name << ", a name of " << length;
        }
    }
}

// The kernel runs the low 32 bits of a system call's number, and of a descriptor argument: an
// open whose number has bit 32 set is an open, and is reported as one.
TEST_F(KernelObserved, AnOpenWhoseNumberHasHighBitsSetIsReported) {
    for (const auto &[name, seen] : {std::pair{"ebpf", ebpf({"highbits", file_})},
                                     std::pair{"strace", strace({"highbits", file_})}}) {
        // The control: the open ran and read the file.
        EXPECT_EQ(seen.outcome.out, "content of A\n") << name << ": " << seen.outcome.err;
        EXPECT_EQ(reads_of(seen.observation, file_), 1U) << name;
    }
}

// A thread flips the last byte of the path buffer while the other opens it: every open the
// observer reports is the file the kernel opened, checked against the inodes the probe saw.
TEST_F(KernelObserved, APathBufferFlippedDuringTheOpenNeverLies) {
    const auto other = dir_.path() / "file-B";
    std::ofstream{other} << "content of B\n";
    for (const auto &[name, seen] :
         {std::pair{"ebpf", ebpf({"racer", file_, other, "3000"})},
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

TEST_F(KernelObserved, AnOpenThroughProcSelfFdIsTheFileBehindIt) {
    for (const auto &[name, seen] : {std::pair{"ebpf", ebpf({"procfd", file_})},
                                     std::pair{"strace", strace({"procfd", file_})}}) {
        EXPECT_EQ(seen.outcome.out, "content of A\n") << name;
        EXPECT_EQ(reads_of(seen.observation, file_), 1U) << name;
    }
    // The control: the O_PATH open alone reads nothing, and is no read.
    for (const auto &[name, seen] : {std::pair{"ebpf", ebpf({"opath", file_})},
                                     std::pair{"strace", strace({"opath", file_})}}) {
        EXPECT_EQ(seen.outcome.status, 0) << name;
        EXPECT_EQ(reads_of(seen.observation, file_), 0U) << name;
    }
}

TEST_F(KernelObserved, ExecveatOfADescriptorIsJudgedByTheFileItRan) {
    const auto program = stdfs::canonical("/bin/true").string();
    // The execs the judge would decide by `program`: by the real path, or the asked one when
    // there is none.
    const auto execs_of = [&program](const audit::Observation &o) {
        std::vector<audit::ObservedAccess> out;
        for (const auto &e : o.events) {
            const auto &decides = e.path_resolved.empty() ? e.path_asked : e.path_resolved;
            if (e.access == audit::Access::exec && e.success && decides == program) {
                out.push_back(e);
            }
        }
        return out;
    };
    const auto seen = ebpf({"execveat", program});
    EXPECT_EQ(seen.outcome.status, 0) << seen.outcome.err;
    const auto by_ebpf = execs_of(seen.observation);
    ASSERT_EQ(by_ebpf.size(), 1U) << "the eBPF observer saw the execveat";
    EXPECT_EQ(by_ebpf[0].path_asked.rfind("/dev/fd/", 0), 0U)
        << "the name the kernel gave the exec; the file decides";
    EXPECT_TRUE(by_ebpf[0].unverified.empty());
    // The reference: strace names the same file, from the descriptor's path.
    EXPECT_EQ(execs_of(strace({"execveat", program}).observation).size(), 1U);
}

// An i386 system call from 64-bit code. This kernel may be built without IA32 emulation: then
// the call kills the process before it opens anything, and neither observer reports an open.
TEST_F(KernelObserved, AnOpenThroughTheI386AbiIsSeenOrNeverHappens) {
    const auto seen = ebpf({"int80", file_});
    const auto reference = strace({"int80", file_});
    if (seen.outcome.status == 128 + SIGSEGV) {
        EXPECT_EQ(seen.outcome.out, "") << "nothing was read";
        EXPECT_EQ(reads_of(seen.observation, file_), 0U);
        EXPECT_EQ(reads_of(reference.observation, file_), 0U);
        // The control: the same file, opened through the 64-bit ABI, is seen.
        EXPECT_EQ(reads_of(ebpf({"open", file_}).observation, file_), 1U);
        return;
    }
    EXPECT_EQ(seen.outcome.out, "content of A\n");
    EXPECT_EQ(reads_of(seen.observation, file_), 1U);
    EXPECT_EQ(reads_of(reference.observation, file_), 1U);
}

// io_uring opens files with no open system call. The eBPF observer cannot see them, so a call
// that sets up io_uring is incomplete; strace, the reference, is blind to it (the bubblewrap
// backend's seccomp filter refuses io_uring for that reason).
TEST_F(KernelObserved, AnOpenThroughIoUringMakesTheAuditIncomplete) {
    const auto seen = ebpf({"io_uring", file_});
    EXPECT_EQ(seen.outcome.out, "content of A\n") << seen.outcome.err;
    EXPECT_FALSE(seen.observation.complete);
    EXPECT_NE(seen.observation.reason.find("io_uring"), std::string::npos)
        << seen.observation.reason;
    const auto reference = strace({"io_uring", file_});
    EXPECT_EQ(reads_of(reference.observation, file_), 0U) << "strace does not see it either";
    // The control: the same read through open is complete.
    EXPECT_TRUE(ebpf({"open", file_}).observation.complete);
}

// Records the ring buffer had no room for (a reader that could not keep up with a flood of
// opens) make the call's audit incomplete, never silently complete.
TEST_F(KernelObserved, RecordsLostToAFullRingBufferMakeTheCallIncomplete) {
    // Each record of its opens nearly fills the 4 KiB ring alone.
    const auto file = long_named_file();
    const ObserverPlugin small{"ebpf", TEA_EBPF_PLUGIN,
                               R"({"ring_buffer_bytes": 4096, "keep_loaded": false})"};
    ASSERT_TRUE(small.probe().available) << small.probe().reason;
    const auto seen = ebpf_with(small, {"opens", file, "2000"});
    EXPECT_EQ(seen.outcome.out, "content of A\n") << seen.outcome.err;
    EXPECT_FALSE(seen.observation.complete);
    EXPECT_NE(seen.observation.reason.find("were lost"), std::string::npos)
        << seen.observation.reason;
    // The control: the same opens through the default ring are complete, every one counted.
    const auto whole = ebpf({"opens", file, "2000"});
    EXPECT_TRUE(whole.observation.complete) << whole.observation.reason;
    EXPECT_EQ(reads_of(whole.observation, file), 2000U);
}

// An open in a table that threads share sends three regions (the file, the string the call named,
// its directory): each is sent at its own length, so its record takes the ring what its paths
// take, about 150 bytes here. Sent at the scratch's room (over 8 KiB each), a burst of the two
// threads' opens overflowed a 256 KiB ring, which now holds all 801 records even if its reader
// never woke. The control: the same threads' opens of a file whose path is about 3,000 bytes make
// records larger than a 4 KiB ring, which are lost, so the completeness checked here can fail.
TEST_F(KernelObserved, OpensOfThreadsTakeTheRingWhatTheirPathsTake) {
    const ObserverPlugin ring256k{"ebpf", TEA_EBPF_PLUGIN,
                                  R"({"ring_buffer_bytes": 262144, "keep_loaded": false})"};
    ASSERT_TRUE(ring256k.probe().available) << ring256k.probe().reason;
    const auto seen = ebpf_with(ring256k, {"threads", file_, "400"});
    EXPECT_EQ(seen.outcome.out, "content of A\n") << seen.outcome.err;
    EXPECT_TRUE(seen.observation.complete) << seen.observation.reason;
    // Every open, and the closes that took a file while a sibling's open ran (reported again).
    EXPECT_GE(reads_of(seen.observation, file_), 801U);
    const auto long_named = long_named_file();
    const ObserverPlugin ring4k{"ebpf", TEA_EBPF_PLUGIN,
                                R"({"ring_buffer_bytes": 4096, "keep_loaded": false})"};
    ASSERT_TRUE(ring4k.probe().available) << ring4k.probe().reason;
    const auto over = ebpf_with(ring4k, {"threads", long_named, "20"});
    EXPECT_FALSE(over.observation.complete);
    EXPECT_NE(over.observation.reason.find("were lost"), std::string::npos)
        << over.observation.reason;
}

// The kernel maps a program's loader (PT_INTERP) with no system call of the program's: the eBPF
// observer reports it from the mapping, as an exec of its own; strace, the reference, does not see
// it (the runtime reads it from the program's file after the call, where it can).
TEST_F(KernelObserved, AnExecReportsTheLoaderTheKernelMapped) {
    const auto loader = stdfs::canonical("/lib64/ld-linux-x86-64.so.2").string();
    const auto execs_of = [&loader](const audit::Observation &o) {
        std::size_t n = 0;
        for (const auto &e : o.events) {
            if (e.access == audit::Access::exec && e.success && e.path_resolved == loader &&
                e.unverified.empty()) {
                ++n;
            }
        }
        return n;
    };
    const auto seen = ebpf({"open", file_});
    EXPECT_TRUE(seen.observation.complete) << seen.observation.reason;
    EXPECT_EQ(execs_of(seen.observation), 1U) << "the probe's own loader";
    EXPECT_EQ(execs_of(strace({"open", file_}).observation), 0U);
    // The control: a static program names no loader, and none is reported.
    EXPECT_EQ(execs_of(ebpf_observer().observe({TEA_EBPF_ENTER}).observation), 0U);
}

// In a descriptor table another task shares, an open is judged by its file and by the string
// it named, read back when it returns. A task that drops the string's page while the open runs
// (so that it cannot be read back, hiding a descriptor it swapped) makes the call's audit
// incomplete.
TEST_F(KernelObserved, AnOpenWhoseStringIsDroppedMakesTheCallIncomplete) {
    const auto fifo = dir_.path() / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const auto seen = ebpf({"dropped", fifo, "1"});
    EXPECT_EQ(seen.outcome.out, "opened=1\n") << seen.outcome.err;
    EXPECT_FALSE(seen.observation.complete);
    EXPECT_NE(seen.observation.reason.find("could not be read back"), std::string::npos)
        << seen.observation.reason;
    // The control: the same open, its page left alone, is complete.
    const auto calm = ebpf({"dropped", fifo, "0"});
    EXPECT_EQ(calm.outcome.out, "opened=1\n") << calm.outcome.err;
    EXPECT_TRUE(calm.observation.complete) << calm.observation.reason;
}

// A process of the call still running when the call is collected may go on reading unseen: the
// call's audit is incomplete, never silently complete.
TEST_F(KernelObserved, AProcessThatOutlivesTheCallMakesItIncomplete) {
    const auto seen = ebpf({"outlive", file_});
    const pid_t child = std::atoi(seen.outcome.out.c_str());
    ASSERT_GT(child, 0) << seen.outcome.out << seen.outcome.err;
    ::kill(child, SIGKILL);
    EXPECT_FALSE(seen.observation.complete);
    EXPECT_NE(seen.observation.reason.find("still running"), std::string::npos)
        << seen.observation.reason;
    EXPECT_EQ(reads_of(seen.observation, file_), 1U) << "what it did before the end is kept";
    // The control: a call whose processes have all ended is complete.
    EXPECT_TRUE(ebpf({"open", file_}).observation.complete);
}

// A sibling thread that shares the opener's descriptor table puts a decoy on the number an open
// returned, and rewrites the open's path string to the decoy's, after the kernel installed the
// opened file and before sys_exit reads it. Each secret the probe opens must still show in the
// audit (by its open, or by the file the sibling's close or dup2 took away), or the open must be
// listed unverified. strace, the reference, names each one by the string it read as the open
// began.
TEST_F(KernelObserved, ADescriptorSwappedUnderAnOpenIsNeverTakenForTheDecoy) {
    constexpr int kOpens = 300;
    const auto secrets = dir_.path() / "secrets";
    stdfs::create_directory(secrets);
    for (int i = 0; i < kOpens; ++i) {
        std::ofstream{secrets / ("secret-" + std::to_string(i))} << "secret " << i << "\n";
    }
    const auto decoy = dir_.path() / "decoy";
    std::ofstream{decoy} << "decoy\n";
    for (const std::string how : {"dup2", "close", "blind"}) {
        const std::vector<std::string> args{"swap", how, secrets, decoy, std::to_string(kOpens)};
        for (const auto &[name, seen] :
             {std::pair{"ebpf", ebpf(args)}, std::pair{"strace", strace(args)}}) {
            // The control: every open was swapped.
            ASSERT_EQ(seen.outcome.out, "swapped=" + std::to_string(kOpens) + "\n")
                << how << " " << name << ": " << seen.outcome.err;
            EXPECT_TRUE(seen.observation.complete)
                << how << " " << name << ": " << seen.observation.reason;
            std::set<std::string> shown;
            std::uint64_t unverified = 0;
            for (std::size_t i = 0; i < seen.observation.events.size(); ++i) {
                const auto &e = seen.observation.events[i];
                for (const auto *path : {&e.path_asked, &e.path_resolved, &e.path_named}) {
                    shown.insert(*path);
                }
                if (e.success && e.access == audit::Access::read && !e.unverified.empty()) {
                    unverified += seen.observation.counts[i];
                }
            }
            std::uint64_t hidden = 0;
            for (int i = 0; i < kOpens; ++i) {
                hidden += shown.count((secrets / ("secret-" + std::to_string(i))).string()) == 0;
            }
            EXPECT_LE(hidden, unverified)
                << how << " " << name << ": " << hidden << " secrets opened and shown nowhere";
            // A sibling that saw the secret's file on the number reports it: none is hidden.
            if (how != "blind") {
                EXPECT_EQ(hidden, 0U) << how << " " << name;
            }
        }
    }
}

// The two ways the programs answer a call that takes a number away while an open of the table
// runs, each made certain with an open that waits for a FIFO's writer: a call that finds a file on
// its number reports it (it may be the open's, swapped away), and one that cannot say what it
// took (a close_range, a dup2 onto a number nothing held when it began) leaves the open
// unverified. With nothing taken, the open is vouched for.
TEST_F(KernelObserved, ANumberTakenAwayWhileAnOpenRunsIsReportedOrLeavesItUnverified) {
    const auto fifo = dir_.path() / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const auto fifo_open = [&fifo](const audit::Observation &o) {
        std::vector<audit::ObservedAccess> out;
        for (const auto &e : o.events) {
            if (e.syscall == "openat" && e.access == audit::Access::read &&
                (e.path_asked == fifo || e.path_resolved == fifo)) {
                out.push_back(e);
            }
        }
        return out;
    };
    const auto closed = [this](const audit::Observation &o) {
        for (const auto &e : o.events) {
            if (e.syscall == "close" && e.path_resolved == file_ &&
                e.access == audit::Access::read) {
                return true;
            }
        }
        return false;
    };
    for (const std::string how : {"none", "close", "close_range", "dup2"}) {
        const auto seen = ebpf({"inflight", how, fifo, file_});
        ASSERT_EQ(seen.outcome.out.rfind("fifo=", 0), 0U) << how << ": " << seen.outcome.err;
        EXPECT_TRUE(seen.observation.complete) << how << ": " << seen.observation.reason;
        const auto opens = fifo_open(seen.observation);
        ASSERT_EQ(opens.size(), 1U) << how;
        const bool blind = how == "close_range" || how == "dup2";
        EXPECT_EQ(!opens[0].unverified.empty(), blind) << how << ": " << opens[0].unverified;
        EXPECT_EQ(closed(seen.observation), how == "close") << how;
    }
}

// Claims the call as the enter program does, from a child that then ends.
void claim_and_end(std::uint64_t token) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::syscall(SYS_close, -1, TEA_EBPF_MAGIC, token);
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
}

// A runtime that gives up on its calls between wrap and collect leaves registrations behind: past
// the kernel maps' slots (8 here, 1,024 by default) they are reclaimed, and the session keeps
// registering calls. Each way a call is abandoned fills the slots on its own: calls whose owner
// ended (their trace directories all kept), then calls never claimed whose directories are gone.
TEST_F(KernelObserved, AbandonedRegistrationsAreReclaimed) {
    const ObserverPlugin few{"ebpf", TEA_EBPF_PLUGIN, R"({"max_calls": 8, "keep_loaded": false})"};
    ASSERT_TRUE(few.probe().available) << few.probe().reason;
    constexpr std::size_t kMoreThanTheSlots = 12;
    for (std::size_t i = 0; i < 2 * kMoreThanTheSlots; ++i) {
        const bool claimed = i < kMoreThanTheSlots;
        const auto dir = dir_.path() / std::to_string(i);
        stdfs::create_directory(dir);
        json wrapped;
        ASSERT_NO_THROW(wrapped = few.wrap({"true"}, dir)) << "registration " << i;
        if (claimed) {
            claim_and_end(token_of(wrapped));  // its owner ended; its directory stays
        } else {
            stdfs::remove(dir);  // never claimed, its directory gone
        }
    }
    // The control: a call whose owner is alive survives the next registration, and is whole.
    const auto a = dir_.path() / "a";
    const auto b = dir_.path() / "b";
    stdfs::create_directory(a);
    stdfs::create_directory(b);
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    const auto token = token_of(few.wrap({"true"}, a));
    const pid_t owner = ::fork();
    if (owner == 0) {
        ::syscall(SYS_close, -1, TEA_EBPF_MAGIC, token);
        char byte = 0;
        if (::read(go[0], &byte, 1) == 1) {
            ::close(::open(file_.c_str(), O_RDONLY));
        }
        ::_exit(0);
    }
    (void)few.wrap({"true"}, b);
    ASSERT_EQ(::write(go[1], "x", 1), 1);
    int status = 0;
    ASSERT_EQ(::waitpid(owner, &status, 0), owner);
    ::close(go[0]);
    ::close(go[1]);
    const auto seen = few.collect(a);
    EXPECT_TRUE(seen.complete) << seen.reason;
    EXPECT_EQ(reads_of(seen, file_), 1U);
    (void)few.collect(b);
}

}  // namespace
}  // namespace tea::plugins
