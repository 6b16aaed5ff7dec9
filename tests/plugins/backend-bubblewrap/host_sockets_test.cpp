// The host-socket walk and the cache it keeps between calls: a directory taken from the cache
// gives what listing it would give, and any change, doubt or damage makes the walk list it again.
// Real sockets, bound in a real directory tree.
#include "host_sockets.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"

namespace tea::bwrap {
namespace {

namespace stdfs = std::filesystem;

// A listening socket bound at `path`, closed with the object (its file stays).
class Listener {
   public:
    explicit Listener(const std::string &path) : fd_(::socket(AF_UNIX, SOCK_STREAM, 0)) {
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0) << path;
        ::listen(fd_, 1);
    }
    Listener(const Listener &) = delete;
    Listener &operator=(const Listener &) = delete;
    ~Listener() { ::close(fd_); }

   private:
    int fd_;
};

class SocketWalk : public ::testing::Test {
   protected:
    SocketWalk() {
        tree_ = root_.path() / "walked";
        stdfs::create_directories(tree_ / "a" / "b");
        stdfs::create_directories(tree_ / "c");
        for (int i = 0; i < 50; ++i) {
            std::ofstream{tree_ / "c" / ("f" + std::to_string(i))}.close();
        }
        options_.directories = {tree_};
        options_.cache_file = root_.path() / "cache";
        // The tree is fresh: taken as settled at once, so the test need not wait for it. Each
        // change below is made a clock tick later, as a change in real use would be.
        options_.settle = std::chrono::nanoseconds{0};
        me_.uid = ::getuid();
        me_.gid = ::getgid();
    }

    [[nodiscard]] std::vector<std::string> found(const SocketScan &scan) const {
        std::vector<std::string> out;
        for (const auto &s : scan.sockets) {
            if (s.path.rfind(tree_.string(), 0) == 0) {
                out.push_back(s.path.substr(tree_.string().size()));
            }
        }
        std::sort(out.begin(), out.end());
        return out;
    }

    static void next_tick() { std::this_thread::sleep_for(std::chrono::milliseconds{20}); }

    test::TempDir root_{"tea-socket-walk"};
    stdfs::path tree_;
    SocketScanOptions options_;
    Identity me_;
};

TEST_F(SocketWalk, AnUnchangedTreeIsTakenFromTheCacheWithTheSameSockets) {
    const Listener one{(tree_ / "one.sock").string()};
    const Listener deep{(tree_ / "a" / "b" / "deep.sock").string()};
    next_tick();
    const auto first = scan_host_sockets(options_, me_);
    EXPECT_EQ(found(first), (std::vector<std::string>{"/a/b/deep.sock", "/one.sock"}));
    EXPECT_EQ(first.directories_reused, 0U);
    EXPECT_EQ(first.directories_read, 4U);  // walked, a, a/b and c
    ASSERT_TRUE(stdfs::exists(options_.cache_file));
    EXPECT_EQ(stdfs::status(options_.cache_file).permissions() & stdfs::perms::all,
              stdfs::perms::owner_read | stdfs::perms::owner_write);

    const auto second = scan_host_sockets(options_, me_);
    EXPECT_EQ(found(second), found(first));
    EXPECT_EQ(second.directories_read, 0U);
    EXPECT_EQ(second.directories_reused, 4U);
    // Without the cache, the same answer (the control: the cache adds and hides nothing).
    SocketScanOptions uncached = options_;
    uncached.cache_file.clear();
    EXPECT_EQ(found(scan_host_sockets(uncached, me_)), found(first));
}

TEST_F(SocketWalk, ASocketBoundInACachedDirectoryIsFound) {
    next_tick();
    (void)scan_host_sockets(options_, me_);
    ASSERT_EQ(scan_host_sockets(options_, me_).directories_read, 0U);
    next_tick();
    const Listener late{(tree_ / "a" / "late.sock").string()};
    const Listener deeper{(tree_ / "a" / "b" / "deeper.sock").string()};
    const auto scan = scan_host_sockets(options_, me_);
    EXPECT_EQ(found(scan), (std::vector<std::string>{"/a/b/deeper.sock", "/a/late.sock"}));
    EXPECT_EQ(scan.directories_read, 2U);  // a and a/b changed; walked and c did not
}

TEST_F(SocketWalk, ADirectoryReplacedUnderTheSameNameIsListedAgain) {
    next_tick();
    (void)scan_host_sockets(options_, me_);
    // Swapped for another directory holding a socket: the parent changes, and the new
    // directory has another inode.
    const auto other = root_.path() / "other";
    stdfs::create_directory(other);
    const Listener s{(other / "swapped.sock").string()};
    next_tick();
    stdfs::rename(tree_ / "c", root_.path() / "old-c");
    stdfs::rename(other, tree_ / "c");
    const auto scan = scan_host_sockets(options_, me_);
    EXPECT_EQ(found(scan), (std::vector<std::string>{"/c/swapped.sock"}));
}

TEST_F(SocketWalk, ARecentlyChangedDirectoryIsNeverKept) {
    options_.settle = std::chrono::hours{1};  // nothing here is that old
    const Listener one{(tree_ / "one.sock").string()};
    (void)scan_host_sockets(options_, me_);
    const auto second = scan_host_sockets(options_, me_);
    EXPECT_EQ(second.directories_reused, 0U);
    EXPECT_EQ(second.directories_read, 4U);
    EXPECT_EQ(found(second), (std::vector<std::string>{"/one.sock"}));
}

TEST_F(SocketWalk, ADamagedOrForeignCacheIsIgnoredAndTheWalkReadsEverything) {
    const Listener one{(tree_ / "a" / "one.sock").string()};
    next_tick();
    (void)scan_host_sockets(options_, me_);
    std::string good;
    {
        std::ifstream in{options_.cache_file, std::ios::binary};
        good.assign(std::istreambuf_iterator<char>{in}, {});
    }
    ASSERT_FALSE(good.empty());
    auto damaged = [&](const std::string &text) {
        stdfs::remove(options_.cache_file);
        std::ofstream{options_.cache_file, std::ios::binary} << text;
        stdfs::permissions(options_.cache_file,
                           stdfs::perms::owner_read | stdfs::perms::owner_write);
        const auto scan = scan_host_sockets(options_, me_);
        EXPECT_EQ(scan.directories_reused, 0U) << text.size();
        EXPECT_EQ(found(scan), (std::vector<std::string>{"/a/one.sock"}));
    };
    damaged(good.substr(0, good.size() - 3));        // cut short
    damaged(good + "x");                             // trailing garbage
    damaged("tea-socket-walk-0" + good.substr(17));  // another format
    damaged(std::string{"\0\0\0", 3});               // nothing in it
    // Counts whose sum overflows to a small number, on a listing whose stamp is the real one:
    // taken, it would show `a` without its socket.
    struct stat st {};
    ASSERT_EQ(::stat((tree_ / "a").c_str(), &st), 0);
    std::string overflow{"tea-socket-walk-1", 17};
    overflow += '\0';
    for (const std::string &f :
         {(tree_ / "a").string(), std::to_string(st.st_dev), std::to_string(st.st_ino),
          std::to_string(st.st_ctim.tv_sec), std::to_string(st.st_ctim.tv_nsec),
          std::to_string(st.st_mtim.tv_sec), std::to_string(st.st_mtim.tv_nsec), std::string{"2"},
          std::string{"18446744073709551615"}, std::string{"1"}}) {
        overflow += f;
        overflow += '\0';
    }
    damaged(overflow);

    // Writable by others: not this user's alone, ignored.
    stdfs::remove(options_.cache_file);
    std::ofstream{options_.cache_file, std::ios::binary} << good;
    stdfs::permissions(options_.cache_file, stdfs::perms::all);
    EXPECT_EQ(scan_host_sockets(options_, me_).directories_reused, 0U);
    // A link to a good file: not followed.
    stdfs::remove(options_.cache_file);
    std::ofstream{root_.path() / "elsewhere", std::ios::binary} << good;
    stdfs::permissions(root_.path() / "elsewhere",
                       stdfs::perms::owner_read | stdfs::perms::owner_write);
    stdfs::create_symlink(root_.path() / "elsewhere", options_.cache_file);
    EXPECT_EQ(scan_host_sockets(options_, me_).directories_reused, 0U);
}

TEST_F(SocketWalk, TheBoundCountsCachedEntriesAsListedOnes) {
    next_tick();
    (void)scan_host_sockets(options_, me_);
    // walked (2 entries) + a (1) + a/b (0) + c (50) = 53.
    for (const bool cached : {false, true}) {
        SocketScanOptions o = options_;
        if (!cached) {
            o.cache_file.clear();
        }
        o.max_entries = 52;
        EXPECT_FALSE(scan_host_sockets(o, me_).walk_complete) << cached;
        o.max_entries = 53;
        EXPECT_TRUE(scan_host_sockets(o, me_).walk_complete) << cached;
    }
}

}  // namespace
}  // namespace tea::bwrap
