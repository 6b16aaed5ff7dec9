// Lending the call's directories to the sandbox identity and giving them back, on real files.
#include "exec/ownership.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/temp_dir.hpp"

namespace tea::exec {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kLent = 4242;  // no account needs to exist: ownership is only numbers

struct stat status_of(const fs::path &p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st;
}

void make_file(const fs::path &p) {
    std::ofstream{p} << "x";
}

class Ownership : public ::testing::Test {
   protected:
    void SetUp() override {
        if (::geteuid() != 0) {
            GTEST_SKIP() << "only root can hand a tree to another identity";
        }
        for (const auto &d : {kept(), disposable()}) {
            fs::create_directories(d / "sub");
            make_file(d / "sub" / "file");
        }
    }
    [[nodiscard]] fs::path kept() const { return dir_.path() / "workspace"; }
    [[nodiscard]] fs::path disposable() const { return dir_.path() / "tmp"; }

   private:
    test::TempDir dir_{"tea-ownership"};
};

TEST_F(Ownership, ALentTreeIsGivenBackAndADisposableOneIsLeftForItsRemoval) {
    {
        const OwnershipLoan loan{{kept(), disposable()}, kLent, kLent, {}, {disposable()}};
        for (const auto &d : {kept(), disposable()}) {
            EXPECT_EQ(status_of(d / "sub" / "file").st_uid, kLent) << d;
            EXPECT_EQ(status_of(d).st_uid, kLent) << d;
        }
        // What the target makes in each.
        for (const auto &d : {kept(), disposable()}) {
            make_file(d / "made");
            ASSERT_EQ(::lchown((d / "made").c_str(), kLent, kLent), 0);
        }
    }
    // Given back, what the target made included (to the owner of the tree's top)...
    for (const auto &p : {kept(), kept() / "sub" / "file", kept() / "made"}) {
        EXPECT_EQ(status_of(p).st_uid, 0U) << p;
    }
    // ...while the disposable tree is not walked again: its caller removes it.
    for (const auto &p : {disposable(), disposable() / "sub" / "file", disposable() / "made"}) {
        EXPECT_EQ(status_of(p).st_uid, kLent) << p;
    }
}

TEST_F(Ownership, ASetuidFileLinkedFromADisposableTreeIntoAKeptOneLosesItsBits) {
    {
        const OwnershipLoan loan{{kept(), disposable()}, kLent, kLent, {}, {disposable()}};
        // The target makes a setuid program in the disposable tree and a second name of it in
        // the tree that stays: left as it is, it would run as the sandbox identity.
        const auto program = disposable() / "suid";
        make_file(program);
        ASSERT_EQ(::lchown(program.c_str(), kLent, kLent), 0);
        ASSERT_EQ(::chmod(program.c_str(), 04755), 0);
        ASSERT_EQ(::link(program.c_str(), (kept() / "suid").c_str()), 0);
    }
    EXPECT_EQ(status_of(kept() / "suid").st_mode & 07777U, 0755U);
    EXPECT_EQ(status_of(disposable() / "suid").st_mode & 07777U, 0755U) << "one inode";
}

TEST_F(Ownership, AWithheldFolderReachedUnderAnotherNameIsNeverLent) {
    // The withheld folder is named through a link to its parent: by name it is not the folder
    // the walk meets, by device and inode it is.
    const auto withheld = kept() / "sub";
    fs::create_directory_symlink("sub", kept() / "moved");
    const auto named = kept() / "moved";
    {
        const OwnershipLoan loan{{kept()}, kLent, kLent, {named / "."}, {}};
        EXPECT_EQ(status_of(kept()).st_uid, kLent);
        EXPECT_EQ(status_of(withheld).st_uid, 0U);
        EXPECT_EQ(status_of(withheld / "file").st_uid, 0U);
    }
    // The control: named as the walk meets it, the folder is kept too; named as nothing, lent.
    {
        const OwnershipLoan loan{{kept()}, kLent, kLent, {withheld}, {}};
        EXPECT_EQ(status_of(withheld / "file").st_uid, 0U);
    }
    {
        const OwnershipLoan loan{{kept()}, kLent, kLent, {kept() / "elsewhere"}, {}};
        EXPECT_EQ(status_of(withheld / "file").st_uid, kLent);
    }
    EXPECT_EQ(status_of(withheld / "file").st_uid, 0U) << "given back";
}

}  // namespace
}  // namespace tea::exec
