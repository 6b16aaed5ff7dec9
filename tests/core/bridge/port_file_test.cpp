// The port file's reading (core/bridge/port_file): what a service may write, and every other thing
// a target can leave in its place, each refused with a sentence naming the path.
#include "bridge/port_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "util/fd.hpp"

namespace fs = std::filesystem;
using tea::bridge::PortFileReading;
using tea::bridge::read_opened_port_file;
using tea::bridge::read_port_file;

namespace {

class PortFile : public ::testing::Test {
   protected:
    void SetUp() override {
        char pattern[] = "/tmp/tea-port-file-test-XXXXXX";
        dir_ = ::mkdtemp(pattern);
    }
    void TearDown() override { fs::remove_all(dir_); }
    void write(const std::string &content) {
        std::ofstream(dir_ / "port", std::ios::binary | std::ios::trunc) << content;
    }
    PortFileReading read() { return read_port_file(dir_); }
    void expect_refused(const std::string &why) {
        const auto r = read();
        EXPECT_EQ(r.state, PortFileReading::State::refused) << r.sentence;
        EXPECT_NE(r.sentence.find((dir_ / "port").string()), std::string::npos) << r.sentence;
        EXPECT_NE(r.sentence.find(why), std::string::npos) << r.sentence;
    }
    fs::path dir_;
};

TEST_F(PortFile, MadeEmptyAndPrivate) {
    tea::bridge::make_port_file(dir_);
    struct stat st {};
    ASSERT_EQ(::lstat((dir_ / "port").c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0600U);
    EXPECT_EQ(st.st_size, 0);
    EXPECT_EQ(read().state, PortFileReading::State::empty);
    // Never made over something already there.
    EXPECT_THROW(tea::bridge::make_port_file(dir_), std::exception);
}

TEST_F(PortFile, APortWithOrWithoutANewline) {
    write("8080");
    EXPECT_EQ(read().port, 8080);
    write("1\n");
    EXPECT_EQ(read().port, 1);
    write("65535\n");
    EXPECT_EQ(read().state, PortFileReading::State::port);
    EXPECT_EQ(read().port, 65535);
}

TEST_F(PortFile, GarbageIsRefusedAndQuoted) {
    for (const std::string garbage :
         {"80a", " 80", "80 ", "80\n\n", "+80", "-1", "0x50", "\n", "8\x1b[2J", "80\r\n"}) {
        write(garbage);
        expect_refused("does not hold a port");
        EXPECT_EQ(read().sentence.find('\x1b'), std::string::npos) << "control bytes quoted raw";
    }
}

TEST_F(PortFile, ANumberOutsideThePortsIsRefused) {
    for (const std::string n : {"0", "65536", "99999", "9999999999999999", "0000000000070000"}) {
        write(n);
        expect_refused("not a port from 1 to 65535");
    }
}

TEST_F(PortFile, AHugeFileIsRefusedWithoutBeingRead) {
    write(std::string(std::size_t{64} << 20, '7'));
    const auto start = std::chrono::steady_clock::now();
    expect_refused("more than 16 bytes");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds{100});
}

TEST_F(PortFile, ALinkIsRefusedNotFollowed) {
    // Control: the same bytes in a regular file are a port.
    std::ofstream(dir_ / "elsewhere") << "8080\n";
    fs::copy_file(dir_ / "elsewhere", dir_ / "port");
    EXPECT_EQ(read().port, 8080);
    fs::remove(dir_ / "port");
    fs::create_symlink(dir_ / "elsewhere", dir_ / "port");
    expect_refused("symbolic link");
    // A link to a host file the target cannot read: its bytes never reach a sentence.
    fs::remove(dir_ / "port");
    fs::create_symlink("/etc/shadow", dir_ / "port");
    expect_refused("symbolic link");
}

TEST_F(PortFile, AHardLinkIsRefused) {
    std::ofstream(dir_ / "elsewhere") << "8080\n";
    fs::create_hard_link(dir_ / "elsewhere", dir_ / "port");
    expect_refused("other links");
}

// The service removes the file between the host's open and its check (as one that plants a
// link in its place may): not written yet, read again next, and never taken for a hard link.
// Control: the same descriptor before the removal is read as the port it holds.
TEST_F(PortFile, AFileRemovedAfterItsOpenIsNotWrittenYetNorAHardLink) {
    write("8080");
    const tea::UniqueFd fd{::open((dir_ / "port").c_str(), O_RDONLY | O_CLOEXEC)};
    ASSERT_TRUE(fd);
    EXPECT_EQ(read_opened_port_file(fd.get(), "port").port, 8080);
    ASSERT_EQ(::lseek(fd.get(), 0, SEEK_SET), 0);
    fs::remove(dir_ / "port");
    const auto removed = read_opened_port_file(fd.get(), "port");
    EXPECT_EQ(removed.state, PortFileReading::State::empty) << removed.sentence;
    EXPECT_NE(removed.sentence.find("removed while it was read"), std::string::npos)
        << removed.sentence;
}

TEST_F(PortFile, AFifoIsRefusedWithoutWaitingForAWriter) {
    ASSERT_EQ(::mkfifo((dir_ / "port").c_str(), 0600), 0);
    expect_refused("not a regular file");
}

// A file the service removed is not written yet: a service may remove it and make it again, and
// what then takes its place is read next. A directory in its place is refused.
TEST_F(PortFile, ARemovedFileIsNotWrittenYetAndADirectoryIsRefused) {
    const auto gone = read_port_file(dir_);
    EXPECT_EQ(gone.state, PortFileReading::State::empty) << gone.sentence;
    EXPECT_NE(gone.sentence.find("is gone"), std::string::npos) << gone.sentence;
    fs::create_directory(dir_ / "port");
    expect_refused("port");
}

}  // namespace

// The session's retry of a call whose target never started: what the first attempt left (a port,
// the relay's socket, a link the set-up could not have made but a retry must not follow) is
// removed, and the port file is empty again, so the retry's service is the only one read.
TEST_F(PortFile, AResetLeavesOnlyAFreshEmptyPortFile) {
    write("8080");
    const auto outside = dir_.parent_path() / (dir_.filename().string() + "-outside");
    std::ofstream(outside) << "kept";
    fs::create_symlink(outside, dir_ / "link");
    fs::create_directory(dir_ / "sub");
    std::ofstream(dir_ / "sub" / "file") << "x";
    ASSERT_EQ(read().port, 8080);
    tea::bridge::reset_bridge_directory(dir_);
    EXPECT_EQ(read().state, PortFileReading::State::empty);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
    std::string content;
    std::ifstream(outside) >> content;
    EXPECT_EQ(content, "kept");
    fs::remove(outside);
}
