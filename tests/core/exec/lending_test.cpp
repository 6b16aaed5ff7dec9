// Lending trees through idmapped mounts in a mount namespace of the call's own, on real files and
// real mounts: what a process of the lent identity sees and makes there, and what stays on disk.
#include "exec/lending.hpp"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "support/temp_dir.hpp"

namespace tea::exec {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kOwner = 4321;  // the tree's owner: no account needs to exist
constexpr uid_t kLent = 4242;   // the identity it is lent to

struct stat status_of(const fs::path &p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st;
}

void make_file(const fs::path &p, uid_t owner) {
    std::ofstream{p} << "x";
    ASSERT_EQ(::lchown(p.c_str(), owner, owner), 0) << p;
}

// Runs `probe` in a child of the test and returns what it printed.
std::string in_child(const std::function<void(std::ostream &)> &probe) {
    std::array<int, 2> out{};
    EXPECT_EQ(::pipe(out.data()), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(out[0]);
        std::ostringstream text;
        probe(text);
        const auto s = text.str();
        (void)!::write(out[1], s.data(), s.size());
        ::_exit(0);
    }
    ::close(out[1]);
    std::string got;
    std::array<char, 4096> buffer{};
    for (ssize_t n = 0; (n = ::read(out[0], buffer.data(), buffer.size())) > 0;) {
        got.append(buffer.data(), static_cast<std::size_t>(n));
    }
    ::close(out[0]);
    ::waitpid(pid, nullptr, 0);
    return got;
}

// Runs `probe` in a child that enters `ns` (unless -1) and becomes kLent, with no capability.
std::string as_lent(int ns, const std::function<void(std::ostream &)> &probe) {
    return in_child([&](std::ostream &text) {
        if (ns >= 0 && ::setns(ns, CLONE_NEWNS) != 0) {
            text << "setns failed ";
        } else if (::setgroups(0, nullptr) != 0 || ::setresgid(kLent, kLent, kLent) != 0 ||
                   ::setresuid(kLent, kLent, kLent) != 0) {
            text << "drop failed ";
        } else {
            probe(text);
        }
    });
}

std::string errno_name(int rc) {
    return rc == 0 ? "ok" : std::to_string(errno);
}

bool mounted_at(const fs::path &path) {
    std::ifstream mounts{"/proc/self/mountinfo"};
    const auto needle = " " + path.string() + " ";
    for (std::string line; std::getline(mounts, line);) {
        if (line.find(needle) != std::string::npos) {
            return true;
        }
    }
    return false;
}

class IdmappedOwnership : public ::testing::Test {
   protected:
    void SetUp() override {
        if (::geteuid() != 0) {
            GTEST_SKIP() << "only root can lend a tree to another identity";
        }
        // A folder only root may search, like /root, holding the tree and a sibling.
        fs::create_directories(tree() / "sub");
        fs::permissions(locked(), fs::perms{0700});
        ASSERT_EQ(::chown(tree().c_str(), kOwner, kOwner), 0);
        ASSERT_EQ(::chown((tree() / "sub").c_str(), kOwner, kOwner), 0);
        fs::permissions(tree(), fs::perms{0700});
        make_file(tree() / "sub" / "file", kOwner);
        make_file(tree() / "others", 0);  // another owner's file in the tree
        make_file(locked() / "sibling", 0);
    }
    [[nodiscard]] fs::path base() const { return dir_.path(); }
    [[nodiscard]] fs::path locked() const { return dir_.path() / "locked"; }
    [[nodiscard]] fs::path tree() const { return locked() / "tree"; }
    [[nodiscard]] exec::Lending lend() const {
        exec::Lending::Request request;
        request.trees = {tree()};
        request.uid = kLent;
        request.gid = kLent;
        return exec::Lending{request};
    }

   private:
    test::TempDir dir_{"tea-lending", fs::perms{0755}};
};

TEST_F(IdmappedOwnership, TheLentIdentityWritesTheTreeAsItsOwnerAndNothingOnDiskChanges) {
    const auto before = status_of(tree() / "sub" / "file");
    const auto lending = lend();
    ASSERT_EQ(lending.lent().size(), 1U);
    EXPECT_TRUE(lending.lent()[0].idmapped);
    const auto seen = as_lent(lending.mount_namespace(), [&](std::ostream &out) {
        struct stat st {};
        ::stat((tree() / "sub" / "file").c_str(), &st);
        out << "owner " << st.st_uid << "\n";
        ::stat((tree() / "others").c_str(), &st);
        out << "others " << st.st_uid << "\n";
        std::ofstream{tree() / "sub" / "made"} << "y";
        out << "append " << (std::ofstream{tree() / "sub" / "file", std::ios::app} << "z").good()
            << "\n";
        out << "others-write " << errno_name(::open((tree() / "others").c_str(), O_WRONLY)) << "\n";
    });
    EXPECT_NE(seen.find("owner 4242\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find("others 65534\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find("append 1\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find("others-write 13\n"), std::string::npos) << seen;  // EACCES
    // On disk: what it made is the owner's, and nothing it did not touch changed.
    EXPECT_EQ(status_of(tree() / "sub" / "made").st_uid, kOwner);
    const auto after = status_of(tree() / "sub" / "file");
    EXPECT_EQ(after.st_uid, kOwner);
    EXPECT_EQ(status_of(tree() / "others").st_uid, 0U);
    EXPECT_EQ(status_of(tree()).st_uid, kOwner);
    EXPECT_EQ(before.st_ino, after.st_ino);
    // The host never sees the mount.
    EXPECT_FALSE(mounted_at(tree()));
}

TEST_F(IdmappedOwnership,
       ATreeBelowAFolderTheIdentityCannotSearchIsReachedInTheCallsNamespaceAlone) {
    const auto probe = [&](std::ostream &out) {
        struct stat st {};
        out << "tree " << errno_name(::stat((tree() / "sub" / "file").c_str(), &st)) << "\n";
        out << "sibling " << errno_name(::stat((locked() / "sibling").c_str(), &st)) << "\n";
        out << "list " << errno_name(::open(locked().c_str(), O_RDONLY | O_DIRECTORY)) << "\n";
    };
    // The control: on the host the identity cannot pass the folder.
    const auto host = as_lent(-1, probe);
    EXPECT_NE(host.find("tree 13\n"), std::string::npos) << host;  // EACCES
    const auto lending = lend();
    const auto seen = as_lent(lending.mount_namespace(), probe);
    EXPECT_NE(seen.find("tree ok\n"), std::string::npos) << seen;
    // The folder is covered: nothing else of it shows, and it cannot be listed.
    EXPECT_NE(seen.find("sibling 2\n"), std::string::npos) << seen;  // ENOENT
    EXPECT_NE(seen.find("list 13\n"), std::string::npos) << seen;    // EACCES
    EXPECT_EQ(status_of(locked()).st_mode & 07777U, 0700U);
}

TEST_F(IdmappedOwnership, AFileSystemThatRefusesAnIdmapIsLentByOwnershipAndGivenBack) {
    // A ramfs takes no idmap. Mounted in a mount namespace of a child of the test, which lends a
    // tree on it and reports what it saw.
    const auto seen = in_child([&](std::ostream &text) {
        const auto ram = base() / "ram";
        fs::create_directory(ram);
        if (::unshare(CLONE_NEWNS) != 0 ||
            ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
            ::mount("none", ram.c_str(), "ramfs", 0, nullptr) != 0) {
            text << "setup failed " << errno;
        } else {
            fs::create_directories(ram / "tree" / "sub");
            std::ofstream{ram / "tree" / "sub" / "file"} << "x";
            exec::Lending::Request request;
            request.trees = {ram / "tree"};
            request.uid = kLent;
            request.gid = kLent;
            {
                exec::Lending lending{request};
                text << "idmapped " << lending.lent().at(0).idmapped << "\n";
                text << "filesystem " << lending.lent().at(0).filesystem << "\n";
                text << "during " << status_of(ram / "tree" / "sub" / "file").st_uid << "\n";
            }
            text << "after " << status_of(ram / "tree" / "sub" / "file").st_uid << "\n";
        }
    });
    EXPECT_NE(seen.find("idmapped 0\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find("filesystem ramfs\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find("during 4242\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find("after 0\n"), std::string::npos) << seen;
}

}  // namespace
}  // namespace tea::exec
