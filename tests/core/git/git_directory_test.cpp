// Which git directory a work tree's history is read from (git/git_directory.hpp), against real
// repositories made with the git CLI: each layout a checkout really has is accepted, and each
// `.git` or git directory that names another repository's files is refused naming the file.
// The end-to-end attacks, a target planting these between two calls, are in
// tests/cli/target_git_test.cpp.
#include "git/git_directory.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "git/workspace_source.hpp"
#include "support/temp_dir.hpp"

namespace tea::git {
namespace {

namespace fs = std::filesystem;

void sh(const std::string &command) {
    const std::string quiet = "{ " + command + " ; } >/dev/null 2>&1";
    ASSERT_EQ(std::system(quiet.c_str()), 0) << command;
}

void write(const fs::path &path, const std::string &content) {
    fs::create_directories(path.parent_path());
    std::ofstream{path} << content;
}

// The refusal's message, or "" when nothing was refused.
template <typename F>
std::string refusal(F &&f) {
    try {
        f();
    } catch (const GitDirectoryError &e) {
        return e.what();
    } catch (const WorkspaceSourceError &e) {
        return e.what();
    }
    return "";
}

#define EXPECT_REFUSED(call, file, words)                                   \
    do {                                                                    \
        const std::string message_ = refusal([&] { (void)(call); });        \
        EXPECT_NE(message_.find((file).string() + ": "), std::string::npos) \
            << "refusal: [" << message_ << "]";                             \
        EXPECT_NE(message_.find(words), std::string::npos) << message_;     \
    } while (false)

class GitDirectoryTest : public ::testing::Test {
   protected:
    void SetUp() override {
        setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
        base_ = fs::canonical(dir_.path());
    }
    // A repository at dir with one commit.
    fs::path repository(const fs::path &dir) {
        fs::create_directories(dir);
        sh("git -C " + dir.string() + " init -q && git -C " + dir.string() +
           " -c user.name=t -c user.email=t@t commit -q --allow-empty -m one");
        return dir;
    }
    test::TempDir dir_{"tea-git-directory"};
    fs::path base_;
};

TEST_F(GitDirectoryTest, TheLayoutsOfARealCheckoutAreTaken) {
    const auto root = repository(base_ / "root");
    auto found = work_tree_git_directory(root);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->git_dir, root / ".git");
    EXPECT_EQ(found->common_dir, root / ".git");
    EXPECT_NO_THROW(check_self_contained(*found));

    const auto linked = base_ / "linked";
    sh("git -C " + root.string() + " worktree add -q --detach " + linked.string());
    found = work_tree_git_directory(linked);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->git_dir, root / ".git" / "worktrees" / "linked");
    EXPECT_EQ(found->common_dir, root / ".git");
    EXPECT_NO_THROW((void)open_self_contained(*found));

    const auto super = repository(base_ / "super");
    sh("git -C " + super.string() + " -c protocol.file.allow=always submodule add -q file://" +
       root.string() + " sub");
    found = work_tree_git_directory(super / "sub");
    ASSERT_TRUE(found);
    EXPECT_EQ(found->git_dir, super / ".git" / "modules" / "sub");
    EXPECT_EQ(found->common_dir, found->git_dir);
    EXPECT_NO_THROW((void)open_self_contained(*found));

    EXPECT_FALSE(work_tree_git_directory(base_));
}

// Each gitdir: below names a real git directory of another work tree: one that a repository on
// the host has, which names its own work tree and never the one the file is in.
TEST_F(GitDirectoryTest, AGitdirFileNamingAnotherWorkTreesGitDirectoryIsRefused) {
    const auto main = repository(base_ / "main");
    sh("git -C " + main.string() + " worktree add -q --detach " + (base_ / "theirs").string());
    const auto super = repository(base_ / "super");
    sh("git -C " + super.string() + " -c protocol.file.allow=always submodule add -q file://" +
       main.string() + " sub");
    const auto ws = base_ / "ws";
    fs::create_directories(ws);
    const auto dot_git = ws / ".git";

    write(dot_git, "gitdir: " + (main / ".git").string() + "\n");
    EXPECT_REFUSED(work_tree_git_directory(ws), dot_git, "a git directory with no core.worktree");
    write(dot_git, "gitdir: " + (main / ".git" / "worktrees" / "theirs").string() + "\n");
    EXPECT_REFUSED(work_tree_git_directory(ws), dot_git,
                   "whose gitdir file names " + (base_ / "theirs" / ".git").string());
    write(dot_git, "gitdir: ../super/.git/modules/sub\n");
    EXPECT_REFUSED(work_tree_git_directory(ws), dot_git, "whose core.worktree is");
    // Control: the same files named from their own work trees are taken.
    EXPECT_TRUE(work_tree_git_directory(base_ / "theirs"));
    EXPECT_TRUE(work_tree_git_directory(super / "sub"));
}

// What whatever writes the work tree could make: a git directory inside it, a link, a .git
// directory or an administrative directory with a commondir of its own choosing.
TEST_F(GitDirectoryTest, AGitDirectoryTheWorkTreeCouldHaveMadeIsRefused) {
    const auto foreign = repository(base_ / "foreign");
    const auto ws = base_ / "ws";
    fs::create_directories(ws / "inner");
    sh("git init -q --bare " + (ws / "inner").string());
    write(ws / ".git", "gitdir: inner\n");
    EXPECT_REFUSED(work_tree_git_directory(ws), ws / ".git", "inside the work tree");

    fs::remove(ws / ".git");
    fs::create_symlink(foreign / ".git", ws / ".git");
    EXPECT_REFUSED(work_tree_git_directory(ws), ws / ".git", "symbolic link");

    fs::remove(ws / ".git");
    fs::create_directories(ws / ".git");
    write(ws / ".git" / "commondir", (foreign / ".git").string() + "\n");
    EXPECT_REFUSED(work_tree_git_directory(ws), ws / ".git" / "commondir", "another git directory");

    // An administrative directory outside the work tree that names it back, made somewhere the
    // same target may write (another workspace), borrowing a foreign repository's objects.
    fs::remove_all(ws / ".git");
    const auto admin = base_ / "elsewhere" / "worktrees" / "x";
    write(admin / "HEAD", "0000000000000000000000000000000000000000\n");
    write(admin / "gitdir", (ws / ".git").string() + "\n");
    write(admin / "commondir", (foreign / ".git").string() + "\n");
    write(ws / ".git", "gitdir: " + admin.string() + "\n");
    EXPECT_REFUSED(work_tree_git_directory(ws), admin / "commondir", "only a linked worktree");
}

// Inside a git directory, every way to reach another repository's files is refused; each case
// starts from a repository that passes (the control).
TEST_F(GitDirectoryTest, AGitDirectoryNamingOtherFilesIsRefused) {
    const auto foreign = repository(base_ / "foreign");
    sh("git -C " + foreign.string() + " repack -adq");
    const auto fresh = [&] {
        fs::remove_all(base_ / "repo");
        const auto repo = repository(base_ / "repo");
        sh("git -C " + repo.string() + " repack -adq");
        GitDirectory dir{repo / ".git", repo / ".git"};
        EXPECT_NO_THROW(check_self_contained(dir));
        return dir;
    };
    auto dir = fresh();
    write(dir.common_dir / "objects" / "info" / "http-alternates", "https://example.com/\n");
    EXPECT_REFUSED(check_self_contained(dir), dir.common_dir / "objects/info/http-alternates",
                   "borrows objects");

    dir = fresh();
    const auto loose = dir.common_dir / "objects" / "ab" / "cdef";
    fs::create_directories(loose.parent_path());
    fs::create_symlink(foreign / ".git" / "objects" / "pack", loose);
    EXPECT_REFUSED(check_self_contained(dir), loose, "symbolic link");

    dir = fresh();
    const auto fifo = dir.common_dir / "objects" / "pack" / "pack-x.idx";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    EXPECT_REFUSED(check_self_contained(dir), fifo, "not a regular file");

    dir = fresh();
    fs::create_symlink(foreign / ".git" / "refs" / "heads", dir.common_dir / "refs" / "theirs");
    EXPECT_REFUSED(check_self_contained(dir), dir.common_dir / "refs/theirs", "symbolic link");

    for (const char *file : {"HEAD", "packed-refs", "shallow", "config"}) {
        dir = fresh();
        fs::remove(dir.common_dir / file);
        fs::create_symlink(foreign / ".git" / "HEAD", dir.common_dir / file);
        EXPECT_REFUSED(check_self_contained(dir), dir.common_dir / file, "symbolic link");
    }

    dir = fresh();
    std::ofstream{dir.common_dir / "config", std::ios::app}
        << "[IncludeIf \"gitdir:/\"]\n\tpath = " << (foreign / ".git" / "config").string() << "\n";
    EXPECT_REFUSED(check_self_contained(dir), dir.common_dir / "config", "[include]");
}

// The repository around a folder is found from the folder's parent: what the folder holds (a
// `.git`, or HEAD, objects and refs at its top) never stands for it.
TEST_F(GitDirectoryTest, TheRepositoryAroundAFolderIsFoundAboveIt) {
    const auto outer = repository(base_ / "outer");
    const auto folder = outer / "task";
    sh("mkdir -p " + (folder / "objects").string() + " " + (folder / "refs").string() +
       " && echo ref: refs/heads/x > " + (folder / "HEAD").string() + " && git init -q " +
       (folder / "nested").string());
    auto found = enclosing_repository(folder);
    ASSERT_TRUE(found);
    EXPECT_FALSE(found->inside_git_dir);
    EXPECT_EQ(found->work_tree, outer);
    EXPECT_EQ(found->directory.common_dir, outer / ".git");
    found = enclosing_repository(folder / "nested");  // task/ looks like a git directory
    ASSERT_TRUE(found);
    EXPECT_TRUE(found->inside_git_dir);
    found = enclosing_repository(outer / ".git" / "refs");
    ASSERT_TRUE(found);
    EXPECT_TRUE(found->inside_git_dir);
    EXPECT_EQ(found->directory.git_dir, outer / ".git");
}

// A repository nested in another's work tree is the project's own, and the outer one is named to
// be withheld with it; a .git made in a folder the outer repository's commit holds is refused.
TEST_F(GitDirectoryTest, AWorkspaceSourceNamesTheRepositoryAroundItsOwn) {
    const auto outer = repository(base_ / "outer");
    const auto nested = repository(outer / "nested");
    auto source = open_workspace_source(nested, {});
    EXPECT_EQ(source.git_dir, nested / ".git");
    EXPECT_EQ(source.enclosing_git_dir, outer / ".git");
    EXPECT_EQ(source.prefix, "");

    write(outer / "task" / "file", "tracked\n");
    sh("git -C " + outer.string() + " add task && git -C " + outer.string() +
       " -c user.name=t -c user.email=t@t commit -q -m task");
    // Control: without a .git of its own the folder's history is the outer repository's.
    source = open_workspace_source(outer / "task", {});
    EXPECT_EQ(source.git_dir, outer / ".git");
    EXPECT_EQ(source.prefix, "task");
    sh("git init -q " + (outer / "task").string() + " && git -C " + (outer / "task").string() +
       " -c user.name=t -c user.email=t@t commit -q --allow-empty -m planted");
    EXPECT_REFUSED(open_workspace_source(outer / "task", {}), outer / "task" / ".git",
                   "tracks as its folder task");
    EXPECT_REFUSED(open_workspace_source(outer / "task", {}, false), outer / "task" / ".git",
                   "tracks as its folder task");
}

}  // namespace
}  // namespace tea::git
