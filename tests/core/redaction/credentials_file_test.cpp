#include "redaction/credentials_file.hpp"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "redaction/secret_set.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace tea::redaction {
namespace {

// The sentence a refusal gives, or "" when `read` did not refuse.
template <typename Read>
std::string refusal(Read read) {
    try {
        read();
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::no_confine);
        return e.what();
    }
    return "";
}

std::string open_and_read(const std::filesystem::path &path) {
    const UniqueFd fd = open_credentials_file(path);
    if (!fd) return "<absent>";
    return read_credentials_file(fd.get(), path.string());
}

class CredentialsFile : public ::testing::Test {
   protected:
    test::TempDir dir_{"tea-redaction", std::filesystem::perms::owner_all |
                                            std::filesystem::perms::group_exec |
                                            std::filesystem::perms::others_exec};
    std::filesystem::path file_ = dir_ / ".credentials.json";
};

TEST_F(CredentialsFile, AFileIsReadWhole) {
    test::write_file(file_, R"({"claudeAiOauth": {}})");
    EXPECT_EQ(open_and_read(file_), R"({"claudeAiOauth": {}})");
}

TEST_F(CredentialsFile, AnAbsentFileIsForTheCallerToJudge) {
    EXPECT_EQ(open_and_read(file_), "<absent>");
}

TEST_F(CredentialsFile, ALinkIsRefused) {
    const auto real = dir_ / "elsewhere.json";
    test::write_file(real, R"({"accessToken": "sk-ant-oat01-ELSEWHERE"})");
    std::filesystem::create_symlink(real, file_);
    EXPECT_EQ(test::read_file(file_.string()).find("ELSEWHERE") != std::string::npos, true);
    const auto why = refusal([&] { open_and_read(file_); });
    EXPECT_NE(why.find(file_.string() + " is a symbolic link"), std::string::npos) << why;
}

TEST_F(CredentialsFile, AFifoIsRefusedWithoutWaitingForAWriter) {
    ASSERT_EQ(::mkfifo(file_.c_str(), 0600), 0);
    const auto why = refusal([&] { open_and_read(file_); });
    EXPECT_NE(why.find(file_.string() + " is a fifo"), std::string::npos) << why;
}

TEST_F(CredentialsFile, ADirectoryIsRefused) {
    std::filesystem::create_directory(file_);
    const auto why = refusal([&] { open_and_read(file_); });
    EXPECT_NE(why.find("is a directory"), std::string::npos) << why;
}

TEST_F(CredentialsFile, AFileOverTheCapIsRefusedAndSaysTheCap) {
    test::write_file(file_, std::string(kMaxCredentialsFileBytes + 1, ' '));
    const auto why = refusal([&] { open_and_read(file_); });
    EXPECT_NE(why.find("holds 65537 bytes"), std::string::npos) << why;
    EXPECT_NE(why.find("at most 64 KiB"), std::string::npos) << why;
    test::write_file(file_, std::string(kMaxCredentialsFileBytes, ' '));  // the cap itself passes
    EXPECT_EQ(open_and_read(file_).size(), kMaxCredentialsFileBytes);
}

// A file whose size says 0 and whose reading goes on past the cap, as a file rewritten while it
// is read does: the cap holds for what is read, not for what fstat said.
TEST_F(CredentialsFile, AFileThatGrowsPastTheCapWhileReadIsRefused) {
    const UniqueFd fd{::open("/proc/kallsyms", O_RDONLY | O_CLOEXEC)};
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || st.st_size != 0) {
        GTEST_SKIP() << "no /proc/kallsyms of size 0 to read";
    }
    const auto why = refusal([&] { read_credentials_file(fd.get(), "/proc/kallsyms"); });
    EXPECT_NE(why.find("grew past 65536 bytes while it was read"), std::string::npos) << why;
}

TEST_F(CredentialsFile, AFileRewrittenWhileReadGivesATornRead) {
    const std::string whole =
        R"({"claudeAiOauth": {"accessToken": "sk-ant-oat01-REWRITTEN-TOKEN", "x": 1}})";
    test::write_file(file_, "{}");
    const UniqueFd fd = open_credentials_file(file_);
    // The client truncates and writes in place; the runtime reads between two of its writes.
    test::write_file(file_, whole.substr(0, whole.find("TOKEN") + 5));
    SecretSet set;
    const auto added = set.add_from_file(fd.get(), file_.string(), {});
    EXPECT_TRUE(added.torn);
    const auto &secrets = set.secrets();
    EXPECT_NE(std::find(secrets.begin(), secrets.end(), "sk-ant-oat01-REWRITTEN-TOKEN"),
              secrets.end());
}

TEST_F(CredentialsFile, AnUnreadableFileIsRefused) {
    test::write_file(file_, "{}");
    ASSERT_EQ(::chmod(file_.c_str(), 0600), 0);
    if (::geteuid() != 0) {
        ASSERT_EQ(::chmod(file_.c_str(), 0), 0);
        const auto why = refusal([&] { open_and_read(file_); });
        EXPECT_NE(why.find("cannot be opened: Permission denied"), std::string::npos) << why;
        return;
    }
    // As root, from a child that is nobody.
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (::setgroups(0, nullptr) != 0 ||
            ::setresgid(test::kNobody, test::kNobody, test::kNobody) != 0 ||
            ::setresuid(test::kNobody, test::kNobody, test::kNobody) != 0) {
            ::_exit(2);
        }
        try {
            open_and_read(file_);
        } catch (const Error &e) {
            const std::string why = e.what();
            ::_exit(why.find("cannot be opened: Permission denied") != std::string::npos ? 0 : 3);
        }
        ::_exit(4);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace tea::redaction
