#include "redaction/file_redactor.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/redaction/naive_redaction.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace tea::redaction {
namespace {

const std::string kToken = "sk-ant-oat01-FILE-TOKEN-0123456789";

struct stat stat_of(const std::filesystem::path &path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0);
    return st;
}

std::size_t entries(const std::filesystem::path &dir) {
    return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir),
                                                  std::filesystem::directory_iterator()));
}

class FileRedactor : public ::testing::Test {
   protected:
    test::TempDir dir_{"tea-redaction"};
    std::filesystem::path record_ = dir_ / "run.json";
    SecretMatcher matcher_{std::vector<std::string>{kToken}};
};

TEST_F(FileRedactor, ARecordIsRewrittenWithoutTheSecret) {
    const std::string text = R"({"stdout": "the token is )" + kToken + "\"}\n";
    test::write_file(record_, text);
    ASSERT_EQ(::chmod(record_.c_str(), 0640), 0);
    const auto before = stat_of(record_);
    // The control: the record holds the token until it is redacted.
    ASSERT_NE(test::read_file(record_).find(kToken), std::string::npos);
    EXPECT_EQ(redact_file(record_, matcher_), 1U);
    EXPECT_EQ(test::read_file(record_), R"({"stdout": "the token is [redacted]"})"
                                        "\n");
    const auto after = stat_of(record_);
    EXPECT_NE(after.st_ino, before.st_ino);  // a new file renamed into place
    EXPECT_EQ(after.st_mode & 07777, 0640U);
    EXPECT_EQ(entries(dir_.path()), 1U);  // no temporary file left beside it
}

TEST_F(FileRedactor, AFileWithoutSecretsIsLeftAsItWas) {
    test::write_file(record_, "nothing to hide\n");
    const auto before = stat_of(record_);
    EXPECT_EQ(redact_file(record_, matcher_), 0U);
    const auto after = stat_of(record_);
    EXPECT_EQ(after.st_ino, before.st_ino);
    EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
    EXPECT_EQ(entries(dir_.path()), 1U);
}

TEST_F(FileRedactor, AFileLargerThanItsBlocksIsRedactedAcrossThem) {
    // Tokens straddling every 64 KiB block boundary the reader cuts at, among near misses.
    std::string text;
    std::mt19937 random(34);
    while (text.size() < 1024 * 1024) {
        text.append(random() % 70000, 'x');
        text.append(random() % 2 == 0 ? kToken : kToken.substr(0, 20));
    }
    test::write_file(record_, text);
    const auto expected = test::naive_redaction(text, {kToken});
    EXPECT_EQ(redact_file(record_, matcher_), expected.markers);
    EXPECT_EQ(test::read_file(record_), expected.text);
}

TEST_F(FileRedactor, ALinkIsNotRewrittenNorWhatItPointsTo) {
    const auto target = dir_ / "elsewhere";
    test::write_file(target, kToken);
    std::filesystem::create_symlink(target, record_);
    try {
        redact_file(record_, matcher_);
        FAIL() << "a link was followed";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::runtime);
        EXPECT_NE(std::string{e.what()}.find(record_.string() + ": it is a symbolic link"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(test::read_file(target), kToken);
    EXPECT_TRUE(std::filesystem::is_symlink(record_));
}

TEST_F(FileRedactor, AFifoIsRefusedWithoutBlocking) {
    ASSERT_EQ(::mkfifo(record_.c_str(), 0600), 0);
    try {
        redact_file(record_, matcher_);
        FAIL() << "a fifo was read";
    } catch (const Error &e) {
        EXPECT_NE(std::string{e.what()}.find("it is not a regular file"), std::string::npos)
            << e.what();
    }
}

TEST_F(FileRedactor, AMissingFileIsAnErrorNamingIt) {
    try {
        redact_file(record_, matcher_);
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_NE(std::string{e.what()}.find(record_.string()), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace tea::redaction
