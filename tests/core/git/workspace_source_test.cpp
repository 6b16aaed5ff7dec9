// A trial's workspace: the evaluated commit without the evaluation folder, written fresh.
#include "git/workspace_source.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "git/patch_apply.hpp"

namespace tea::git {
namespace {

namespace fs = std::filesystem;

void sh(const std::string &command) {
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

class WorkspaceSourceTest : public ::testing::Test {
   protected:
    void SetUp() override {
        std::string pattern = (fs::temp_directory_path() / "tea-ws-source-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        base_ = pattern;
        repo_ = base_ / "repo";
        fs::create_directories(repo_ / "proj" / ".tea" / "evaluator");
        fs::create_directories(repo_ / "proj" / "bin");
        std::ofstream{repo_ / "proj" / "bin" / "tool"} << "#!/bin/sh\necho hi\n";
        fs::permissions(repo_ / "proj" / "bin" / "tool",
                        fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
        std::ofstream{repo_ / "proj" / ".tea" / "evaluator" / "answers"} << "secret";
        std::ofstream{repo_ / "proj" / "README"} << "readme";
        fs::create_symlink("README", repo_ / "proj" / "link");
        std::ofstream{repo_ / "other.txt"} << "outside the project folder";
        sh("git init -q " + repo_.string() + " && git -C " + repo_.string() + " add -A && git -C " +
           repo_.string() + " -c user.name=t -c user.email=t@t commit -q -m one");
        // Uncommitted: never part of the evaluated commit.
        std::ofstream{repo_ / "proj" / "uncommitted"} << "draft";
    }
    void TearDown() override { fs::remove_all(base_); }
    fs::path base_, repo_;
};

TEST_F(WorkspaceSourceTest, ChecksOutTheProjectFolderOfTheCommitWithoutTheEvaluation) {
    const auto source = open_workspace_source(repo_ / "proj", {".tea"});
    ASSERT_TRUE(source.git);
    EXPECT_EQ(source.prefix, "proj");
    EXPECT_EQ(source.commit.size(), 40U);
    EXPECT_EQ(source.git_dir, fs::canonical(repo_ / ".git"));
    const auto ws = base_ / "ws";
    fs::create_directory(ws);
    const auto m = materialize(source, ws);
    EXPECT_EQ(m.files, 3U);
    EXPECT_TRUE(fs::is_regular_file(ws / "README"));
    EXPECT_TRUE(fs::is_symlink(ws / "link"));
    EXPECT_EQ(fs::read_symlink(ws / "link"), "README");
    EXPECT_NE(fs::status(ws / "bin" / "tool").permissions() & fs::perms::owner_exec,
              fs::perms::none);
    EXPECT_FALSE(fs::exists(ws / ".tea"));         // the grading material is never copied
    EXPECT_FALSE(fs::exists(ws / "uncommitted"));  // the commit, not the working tree
    EXPECT_FALSE(fs::exists(ws / ".git"));
    EXPECT_FALSE(fs::exists(ws / "other.txt"));
    // Control: without the exclusion the folder would be there.
    const auto ws2 = base_ / "ws2";
    fs::create_directory(ws2);
    (void)materialize(open_workspace_source(repo_ / "proj", {}), ws2);
    EXPECT_TRUE(fs::exists(ws2 / ".tea" / "evaluator" / "answers"));
}

// Every file of a git directory's object store, with its size: what a write would change.
std::map<std::string, std::uintmax_t> objects_of(const fs::path &git_dir) {
    std::map<std::string, std::uintmax_t> out;
    for (const auto &e : fs::recursive_directory_iterator(git_dir / "objects")) {
        out[e.path().string()] = e.is_regular_file() ? e.file_size() : 0;
    }
    return out;
}

// A mutation's patch is applied in memory: the user's object store is not written (libgit2
// stores a patched blob where it can write, which would be the project's .git). Control: a
// blob written by git itself shows in the same listing.
TEST_F(WorkspaceSourceTest, APatchIsAppliedWithoutWritingTheProjectsObjects) {
    const auto source = open_workspace_source(repo_ / "proj", {".tea"});
    const auto before = objects_of(repo_ / ".git");
    const std::string patch =
        "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1 +1 @@\n-readme\n"
        "\\ No newline at end of file\n+patched\n\\ No newline at end of file\n";
    const auto changes = apply_patch(source, patch);
    ASSERT_EQ(changes.size(), 1U);
    EXPECT_EQ(changes[0].path, "README");
    EXPECT_EQ(changes[0].content, "patched");
    EXPECT_EQ(objects_of(repo_ / ".git"), before);
    sh("printf 'patched' | git -C " + repo_.string() + " hash-object -w --stdin >/dev/null");
    EXPECT_NE(objects_of(repo_ / ".git"), before);
}

TEST_F(WorkspaceSourceTest, AProjectInNoRepositoryIsCopiedWithoutTheEvaluation) {
    const auto plain = base_ / "plain";
    fs::create_directories(plain / ".tea");
    std::ofstream{plain / ".tea" / "answers"} << "secret";
    std::ofstream{plain / "file"} << "x";
    fs::create_symlink("/etc/shadow", plain / "shadow-link");
    const auto source = open_workspace_source(plain, {".tea"});
    ASSERT_FALSE(source.git);
    const auto ws = base_ / "ws";
    fs::create_directory(ws);
    (void)materialize(source, ws);
    EXPECT_TRUE(fs::exists(ws / "file"));
    EXPECT_FALSE(fs::exists(ws / ".tea"));
    EXPECT_TRUE(fs::is_symlink(ws / "shadow-link"));  // a link stays a link, never its target
}

TEST_F(WorkspaceSourceTest, ARepositoryWithoutACommitIsNamed) {
    const auto empty = base_ / "empty";
    sh("git init -q " + empty.string());
    try {
        (void)open_workspace_source(empty, {});
        FAIL() << "expected a refusal";
    } catch (const WorkspaceSourceError &e) {
        EXPECT_NE(std::string{e.what()}.find("no commit"), std::string::npos) << e.what();
    }
}

// A partial clone checked out in part never fetched the project's other files: the commit cannot
// be written without a fetch, and the error says which commit, never fetching.
TEST_F(WorkspaceSourceTest, ACommitWhoseObjectsTheCloneLacksIsNamedAndNothingIsFetched) {
    const auto clone = base_ / "clone";
    sh("git -C " + repo_.string() + " config uploadpack.allowFilter true && git clone -q " +
       "--filter=blob:none --no-checkout file://" + repo_.string() + " " + clone.string() +
       " && git -C " + clone.string() + " checkout -q HEAD -- proj/bin");
    const auto source = open_workspace_source(clone / "proj", {".tea"});
    const auto ws = base_ / "ws";
    fs::create_directory(ws);
    try {
        (void)materialize(source, ws);
        FAIL() << "expected a refusal";
    } catch (const MissingObjectsError &e) {
        EXPECT_EQ(e.commit(), source.commit);
        EXPECT_NE(std::string{e.what()}.find("lacks objects of commit " + source.commit),
                  std::string::npos)
            << e.what();
    }
    // Still missing: the refusal fetched nothing.
    sh("git -C " + clone.string() + " rev-list --objects --missing=print HEAD | grep -q '^?'");
    // Control: the same commit of the full repository is written.
    const auto full = base_ / "full";
    fs::create_directory(full);
    EXPECT_EQ(materialize(open_workspace_source(repo_ / "proj", {".tea"}), full).files, 3U);
}

}  // namespace
}  // namespace tea::git
