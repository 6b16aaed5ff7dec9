// Lending the call's directories to the sandbox identity and giving them back, on real files.
#include "exec/ownership.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/temp_dir.hpp"
#include "util/error.hpp"

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

TEST_F(Ownership, ADirectorySwappedForALinkDuringTheWalkNeverCarriesItOutOfTheTree) {
    // A host folder the walk must never reach, holding the names each folder of the tree holds,
    // and a tree of many folders that another process keeps swapping for links to it while the
    // tree is lent and given back: a walk that names entries by path through a folder swapped
    // since would change the host folder's entries of the same names.
    const auto host = kept().parent_path() / "host";
    fs::create_directories(host / "below");
    std::vector<fs::path> host_entries{host, host / "below"};
    for (int f = 0; f < 8; ++f) {
        make_file(host / ("f" + std::to_string(f)));
        host_entries.push_back(host / ("f" + std::to_string(f)));
    }
    constexpr int folders = 64;
    for (int i = 0; i < folders; ++i) {
        const auto d = kept() / ("d" + std::to_string(i));
        fs::create_directories(d / "below");
        for (int f = 0; f < 8; ++f) {
            make_file(d / ("f" + std::to_string(f)));
        }
    }
    std::atomic<bool> stop{false};
    std::atomic<long> swaps{0};
    std::thread swapper{[&] {
        // Each folder in turn becomes a link to the host folder, then a folder again.
        for (int i = 0; !stop; i = (i + 1) % folders) {
            const auto d = kept() / ("d" + std::to_string(i));
            const auto away = kept() / ("away" + std::to_string(i));
            std::error_code ec;
            fs::rename(d, away, ec);
            if (ec) {
                continue;
            }
            fs::create_directory_symlink(host, d, ec);
            std::this_thread::yield();
            fs::remove(d, ec);
            fs::rename(away, d, ec);
            ++swaps;
        }
    }};
    for (int round = 0; round < 40; ++round) {
        try {
            OwnershipLoan loan{{kept()}, kLent, kLent, {}, {}};
            loan.restore();
        } catch (const Error &) {
            // A folder that left mid-walk may fail the loan; the host folder is what counts.
        }
    }
    stop = true;
    swapper.join();
    ASSERT_GT(swaps.load(), 40);
    for (const auto &p : host_entries) {
        EXPECT_EQ(status_of(p).st_uid, 0U) << p << " was handed over through a swapped link";
    }
    // The control: the walk does lend what really is in the tree.
    {
        const OwnershipLoan loan{{kept()}, kLent, kLent, {}, {}};
        EXPECT_EQ(status_of(kept() / "d0" / "f0").st_uid, kLent);
        EXPECT_EQ(status_of(kept() / "d0" / "below").st_uid, kLent);
    }
}

}  // namespace
}  // namespace tea::exec
