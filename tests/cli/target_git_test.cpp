// exec's private repository (core/cli/target_git.cpp) against a target that writes its workspace
// between calls: the real tea-evaluate, bubblewrap, strace and git. A first call plants a `.git`
// that names, borrows from or links to a foreign repository (withheld, as a grading repository or
// another of the user's would be); the next call must not show that repository's history and must
// be refused naming the file and why. Controls: the foreign history is on the host, and a real
// repository root, linked worktree, submodule and nested repository keep their private history.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace tea {
namespace {

namespace fs = std::filesystem;

std::string first_line(const std::string &text) {
    return text.substr(0, text.find('\n'));
}

void replace_all(std::string &text, const std::string &from, const std::string &to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
}

class TargetGit : public ::testing::Test {
   protected:
    void SetUp() override {
        base_ = test::make_temp_dir("tea-target-git");
        ::chmod(base_.c_str(), 0755);
        foreign_ = base_ / "foreign";
        fs::create_directories(foreign_);
        git(foreign_, {"init", "-q"});
        test::write_file((foreign_ / "notes").string(), "foreign\n");
        git(foreign_, {"add", "-A"});
        git(foreign_, {"commit", "-q", "-m", kForeignMessage});
        git(foreign_, {"repack", "-adq"});
        foreign_commit_ = first_line(git(foreign_, {"rev-parse", "HEAD"}));
        for (const auto &e : fs::directory_iterator(foreign_ / ".git" / "objects" / "pack")) {
            if (e.path().extension() == ".pack") foreign_pack_ = e.path().stem().string();
        }
        workspace_ = base_ / "ws";
        fs::create_directories(workspace_);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(base_, ec);
    }

    // git in dir as the user runs it; the test fails on a non-zero status.
    static std::string git(const fs::path &dir, std::vector<std::string> args) {
        args.insert(args.begin(), {"git", "-C", dir.string(), "-c", "user.name=t", "-c",
                                   "user.email=t@t", "-c", "protocol.file.allow=always"});
        const auto o = test::run(args, test::environment_with({}));
        EXPECT_EQ(o.status, 0) << args[9] << ": " << o.err;
        return o.out;
    }

    // A confined call in workspace; the foreign repository is withheld from every call. `env`:
    // more of the caller's variables, which exec passes on to the target.
    [[nodiscard]] test::Outcome exec(const fs::path &workspace, const std::string &script,
                                     std::vector<std::string> env = {}) const {
        env.insert(env.end(), {"XDG_CONFIG_HOME=/nonexistent-tea-test",
                               "TEA_EVALUATE_PRIVATE_ROOT=" + (base_ / "private").string()});
        return test::run(
            {TEA_EVALUATE_BIN, "-v", "exec", "--backend", "bubblewrap", "--workspace",
             workspace.string(), "--withhold", foreign_.string(), "--", "sh", "-c", script},
            test::environment_with(env));
    }

    // The script with FOREIGN, COMMIT and PACK filled in.
    [[nodiscard]] std::string filled(std::string script) const {
        replace_all(script, "FOREIGN", foreign_.string());
        replace_all(script, "COMMIT", foreign_commit_);
        replace_all(script, "PACK", foreign_pack_);
        return script;
    }

    static constexpr const char *kForeignMessage = "FOREIGN-HISTORY-5e1d";
    fs::path base_, foreign_, workspace_;
    std::string foreign_commit_, foreign_pack_;
};

struct Plant {
    const char *name;
    const char *script;  // call 1, in the workspace
    const char *reason;  // what the refusal of call 2 says
};

void PrintTo(const Plant &plant, std::ostream *os) {
    *os << plant.name;
}

class PlantedGit : public TargetGit, public ::testing::WithParamInterface<Plant> {};

TEST_P(PlantedGit, TheNextCallDoesNotReadTheForeignHistoryAndIsRefused) {
    // Control: the foreign history is there on the host, and the workspace has no repository yet.
    EXPECT_NE(git(foreign_, {"log", "--format=%s"}).find(kForeignMessage), std::string::npos);
    const auto plant = exec(workspace_, filled(GetParam().script));
    ASSERT_EQ(plant.status, 0) << plant.err;
    ASSERT_TRUE(fs::exists(fs::symlink_status(workspace_ / ".git")));

    const auto next = exec(workspace_, "git log --format=%s 2>&1; echo ran");
    EXPECT_EQ(next.out.find(kForeignMessage), std::string::npos) << next.out;
    EXPECT_EQ(next.status, 2) << next.out << next.err;
    EXPECT_EQ(next.out.find("ran"), std::string::npos) << next.out;
    EXPECT_NE(next.err.find((workspace_ / ".git").string()), std::string::npos) << next.err;
    EXPECT_NE(next.err.find(GetParam().reason), std::string::npos) << next.err;
    // Refused before the confinement started, with a reason, never as a host failure.
    EXPECT_EQ(next.err.find("before the target started"), std::string::npos) << next.err;
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, PlantedGit,
    ::testing::Values(
        Plant{"GitdirFile", "printf 'gitdir: FOREIGN/.git\\n' > .git", "neither a linked worktree"},
        Plant{"GitdirFileRelative", "printf 'gitdir: ../foreign/.git\\n' > .git",
              "neither a linked worktree"},
        Plant{"LinkToTheGitDirectory", "ln -s FOREIGN/.git .git", "symbolic link"},
        Plant{"CommonDir",
              "mkdir -p .git/objects .git/refs && echo COMMIT > .git/HEAD && "
              "echo FOREIGN/.git > .git/commondir",
              "commondir"},
        Plant{"Alternates",
              "mkdir -p .git/objects/info .git/refs && echo COMMIT > .git/HEAD && "
              "echo FOREIGN/.git/objects > .git/objects/info/alternates",
              "alternates"},
        Plant{"LinkedObjects",
              "mkdir -p .git/refs && echo COMMIT > .git/HEAD && ln -s FOREIGN/.git/objects "
              ".git/objects",
              "symbolic link"},
        Plant{"LinkedPack",
              "mkdir -p .git/objects/pack .git/refs && echo COMMIT > .git/HEAD && "
              "for e in idx pack; do ln -s FOREIGN/.git/objects/pack/PACK.$e "
              ".git/objects/pack/PACK.$e; done",
              "symbolic link"},
        Plant{"ConfigInclude",
              "git init -q && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m "
              "own && git config include.path FOREIGN/.git/config",
              "[include]"}),
    [](const ::testing::TestParamInfo<Plant> &layout) { return std::string{layout.param.name}; });

// A workspace in a folder of the project's commit: its history is the project's, withheld. A
// repository the first call makes there would, opened by discovery, stand for the project's and
// leave the project's git directory in view of the next call.
TEST_F(TargetGit, ARepositoryPlantedInAFolderOfTheProjectIsRefused) {
    const auto project = base_ / "project";
    const auto folder = project / "task";
    fs::create_directories(folder);
    test::write_file((folder / "README").string(), "task\n");
    git(project, {"init", "-q"});
    git(project, {"add", "-A"});
    git(project, {"commit", "-q", "-m", "PROJECT-HISTORY-a41c"});
    const std::string probe =
        "git --git-dir=" + (project / ".git").string() + " log --format=%s 2>&1; echo ran";
    // Before the plant the project's git directory is withheld from a call in the folder.
    const auto before = exec(folder, probe);
    EXPECT_EQ(before.status, 0) << before.err;
    EXPECT_EQ(before.out.find("PROJECT-HISTORY-a41c"), std::string::npos) << before.out;
    EXPECT_NE(before.out.find("ran"), std::string::npos) << before.out;

    const auto plant = exec(folder,
                            "git init -q && git -c user.name=t -c user.email=t@t commit -q "
                            "--allow-empty -m own");
    ASSERT_EQ(plant.status, 0) << plant.err;
    const auto next = exec(folder, probe);
    EXPECT_EQ(next.out.find("PROJECT-HISTORY-a41c"), std::string::npos) << next.out;
    EXPECT_EQ(next.status, 2) << next.out << next.err;
    EXPECT_NE(next.err.find((folder / ".git").string()), std::string::npos) << next.err;
    EXPECT_NE(next.err.find("tracks"), std::string::npos) << next.err;
    // Control: on the host the project's history is there.
    EXPECT_NE(git(project, {"log", "--format=%s"}).find("PROJECT-HISTORY-a41c"), std::string::npos);
}

// The layouts a real checkout has keep their private repository: git log in the call prints the
// checkout's own history, and the repository that holds it is not in view.
class RealCheckout : public TargetGit {
   protected:
    // hidden_git_dir: the git directory (or the one holding it) that the call must not read; a
    // marker in its configuration shows whether the call reads it.
    void expect_history(const fs::path &workspace, const std::string &message,
                        const fs::path &hidden_git_dir) const {
        git(workspace,
            {"config", "-f", (hidden_git_dir / "config").string(), "tea.marker", "HOST-GIT-DIR"});
        const auto call =
            exec(workspace, "git log --format=%s 2>&1; grep -q HOST-GIT-DIR " +
                                (hidden_git_dir / "config").string() +
                                " 2>/dev/null && echo git-dir-read || echo git-dir-hidden");
        EXPECT_EQ(call.status, 0) << call.err;
        EXPECT_NE(call.out.find(message), std::string::npos) << call.out;
        EXPECT_NE(call.out.find("git-dir-hidden"), std::string::npos) << call.out;
        EXPECT_NE(call.err.find("history: private repository"), std::string::npos) << call.err;
        // Control: the host reads the marker there.
        EXPECT_NE(test::read_file((hidden_git_dir / "config").string()).find("HOST-GIT-DIR"),
                  std::string::npos);
    }
    fs::path make_repository(const fs::path &dir, const std::string &message) const {
        fs::create_directories(dir);
        git(dir, {"init", "-q"});
        test::write_file((dir / "file").string(), message + "\n");
        git(dir, {"add", "-A"});
        git(dir, {"commit", "-q", "-m", message});
        return dir;
    }
};

TEST_F(RealCheckout, ARepositoryRootGetsItsHistory) {
    const auto repo = make_repository(base_ / "root", "ROOT-HISTORY");
    expect_history(repo, "ROOT-HISTORY", repo / ".git");
}

TEST_F(RealCheckout, ALinkedWorktreeGetsItsHistory) {
    const auto repo = make_repository(base_ / "main", "MAIN-HISTORY");
    const auto linked = base_ / "linked";
    git(repo, {"worktree", "add", "-q", "--detach", linked.string()});
    expect_history(linked, "MAIN-HISTORY", repo / ".git");
}

TEST_F(RealCheckout, ASubmoduleGetsItsHistory) {
    const auto sub = make_repository(base_ / "sub", "SUB-HISTORY");
    const auto super = make_repository(base_ / "super", "SUPER-HISTORY");
    git(super, {"submodule", "add", "-q", "file://" + sub.string(), "sub"});
    git(super, {"commit", "-q", "-m", "with the submodule"});
    ASSERT_TRUE(fs::is_regular_file(super / "sub" / ".git"));
    // The superproject's git directory holds the submodule's: both are out of view.
    expect_history(super / "sub", "SUB-HISTORY", super / ".git");
}

TEST_F(RealCheckout, ARepositoryNestedInAnotherGetsItsOwnHistoryAndNotTheOuter) {
    const auto outer = make_repository(base_ / "outer", "OUTER-HISTORY");
    const auto nested = make_repository(outer / "nested", "NESTED-HISTORY");
    expect_history(nested, "NESTED-HISTORY", outer / ".git");
}

// The private repository is the runtime's and the checkout the sandbox identity's, so the target's
// git needs safe.directory; granting it must not cost the caller the git configuration they pass
// through the environment (GIT_CONFIG_COUNT and its KEY_n/VALUE_n pairs).
TEST_F(RealCheckout, TheCallersGitConfigurationSurvivesBesideTheSafeDirectoryGrant) {
    const auto repo = make_repository(base_ / "own-config", "OWN-CONFIG-HISTORY");
    const std::vector<std::string> caller{
        "GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=CALLER-NAME-7f3a",
        "GIT_CONFIG_KEY_1=tea.probe", "GIT_CONFIG_VALUE_1=CALLER-SETTING-c2e9"};
    const auto call = exec(repo,
                           "echo name=$(git config user.name); echo probe=$(git config tea.probe); "
                           "git status --porcelain >/dev/null && echo status-ok; "
                           "git log --format=%s",
                           caller);
    EXPECT_EQ(call.status, 0) << call.err;
    EXPECT_NE(call.out.find("name=CALLER-NAME-7f3a"), std::string::npos) << call.out << call.err;
    EXPECT_NE(call.out.find("probe=CALLER-SETTING-c2e9"), std::string::npos) << call.out;
    // safe.directory holds: git reads the repository it does not own.
    EXPECT_NE(call.out.find("status-ok"), std::string::npos) << call.out << call.err;
    EXPECT_NE(call.out.find("OWN-CONFIG-HISTORY"), std::string::npos) << call.out;
    // Control: the same list reaches git on the host.
    const auto host = test::run({"git", "-C", repo.string(), "config", "user.name"},
                                test::environment_with(caller));
    EXPECT_EQ(first_line(host.out), "CALLER-NAME-7f3a") << host.err;
    if (::geteuid() == 0) {
        // Control: the grant is what lets the target's git in. A target that empties the list
        // for itself is refused by git's ownership check (as root, the checkout is lent to the
        // sandbox account and the private repository stays root's).
        const auto without = exec(repo, "GIT_CONFIG_COUNT=0 git status 2>&1; echo status=$?");
        EXPECT_NE(without.out.find("dubious ownership"), std::string::npos) << without.out;
        EXPECT_EQ(without.out.find("status=0"), std::string::npos) << without.out;
    }
}

// A list git itself would refuse (a key it announces and does not hold) is refused before the
// call, naming the variable, rather than numbered over.
TEST_F(RealCheckout, AMalformedGitConfigListOfTheCallerIsRefusedNamingTheVariable) {
    const auto repo = make_repository(base_ / "bad-config", "BAD-CONFIG-HISTORY");
    const std::vector<std::string> caller{"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=user.name",
                                          "GIT_CONFIG_VALUE_0=x"};
    const auto call = exec(repo, "echo ran", caller);
    EXPECT_EQ(call.status, 2) << call.out << call.err;
    EXPECT_EQ(call.out.find("ran"), std::string::npos) << call.out;
    EXPECT_NE(call.err.find("GIT_CONFIG_KEY_1"), std::string::npos) << call.err;
    // Control: git on the host refuses the same list.
    const auto host =
        test::run({"git", "-C", repo.string(), "status"}, test::environment_with(caller));
    EXPECT_NE(host.status, 0) << host.out;
    EXPECT_NE(host.err.find("GIT_CONFIG_KEY_1"), std::string::npos) << host.err;
}

}  // namespace
}  // namespace tea
