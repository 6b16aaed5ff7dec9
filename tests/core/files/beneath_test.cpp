// The runtime's reads and writes in a workspace a target left behind: links, fifos and large files
// must never lead it elsewhere, block it or fill the disk. Each refusal has its control.
#include "files/beneath.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
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

// Runs `body` in a child whose seccomp filter answers openat2 with ENOSYS, as the confinement's
// does (tea-skill-runner writes beneath the agent's home there); its exit status.
template <typename Body>
int without_openat2(Body body) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        std::array<sock_filter, 4> filter{{
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        }};
        sock_fprog program{static_cast<unsigned short>(filter.size()), filter.data()};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
            ::_exit(100);
        }
        ::_exit(body());
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(Beneath, WithoutOpenat2TheWalkByComponentsKeepsTheSameRules) {
    stdfs::create_symlink(secret_, ws_ / "input.txt");
    stdfs::create_directory_symlink(base_, ws_ / "dir");
    const int status = without_openat2([&] {
        // openat2 itself is refused here: the checks below use the fallback.
        open_how how{};
        if (::syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof how) >= 0 || errno != ENOSYS) {
            return 1;
        }
        try {
            write_beneath(ws_, "notes/today.txt", "five");  // control: a plain write lands
        } catch (const Error &) {
            return 2;
        }
        for (const char *rel : {"input.txt", "dir/secret"}) {
            try {
                write_beneath(ws_, rel, "overwritten");
                return 3;
            } catch (const Error &) {
            }
        }
        const auto copied = copy_out_beneath(ws_, "input.txt", out_ / "copied", 1024);
        if (copied.status == CopyResult::Status::copied) {
            return 4;
        }
        // A ".." step would climb out of the root, as RESOLVE_BENEATH refuses.
        const auto climbed = copy_out_beneath(ws_, "notes/../../secret", out_ / "climbed", 1024);
        const auto control = copy_out_beneath(ws_, "notes/today.txt", out_ / "control", 1024);
        if (climbed.status == CopyResult::Status::copied) {
            return 5;
        }
        return control.status == CopyResult::Status::copied ? 0 : 6;
    });
    EXPECT_EQ(status, 0);
    EXPECT_EQ(slurp(ws_ / "notes" / "today.txt"), "five");
    EXPECT_EQ(slurp(secret_), "grading material");
    EXPECT_FALSE(stdfs::exists(out_ / "copied"));
    EXPECT_FALSE(stdfs::exists(out_ / "climbed"));
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
