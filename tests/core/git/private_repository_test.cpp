// Tests of the private repository against real repositories made with the git CLI. Each
// protection (a withheld object is absent, a read-only repository refuses a commit) comes with a
// positive control that shows the same probe succeeding where nothing withholds.
#include "git/private_repository.hpp"

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

// libgit2 1.5 leaks a PCRE2 match block each time it opens a repository whose configuration has an
// [extensions] section (a partial clone): not ours to fix, and the sanitizer build must stay green.
extern "C" const char *__lsan_default_suppressions();
extern "C" const char *__lsan_default_suppressions() {
    return "leak:libpcre2-8.so\n";
}

namespace fs = std::filesystem;
using tea::git::PrivateRepositoryError;
using tea::git::PrivateRepositoryRequest;

namespace {

struct Output {
    int status = -1;
    std::string text;  // stdout and stderr together
};

// Runs a shell command in dir; the paths used here are temp paths without shell metacharacters.
Output sh(const fs::path &dir, const std::string &command) {
    const std::string full = "cd '" + dir.string() + "' && { " + command + " ; } 2>&1";
    Output out;
    FILE *pipe = popen(full.c_str(), "r");
    if (pipe == nullptr) return out;
    char buffer[4096];
    std::size_t n = 0;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.text.append(buffer, n);
    const int status = pclose(pipe);
    out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

std::string ok(const fs::path &dir, const std::string &command) {
    const Output out = sh(dir, command);
    EXPECT_EQ(out.status, 0) << command << "\n" << out.text;
    return out.text;
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

void write(const fs::path &path, const std::string &content) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
}

// Traversable by the unprivileged user of the permission tests.
class TempDir : public tea::test::TempDir {
   public:
    TempDir() : tea::test::TempDir{"tea-git-test", fs::perms{0755}} {}
};

const char *const kSecretOld = "GRADING-SECRET-7f3a1c";       // packed in the project
const char *const kSecretLoose = "GRADING-SECRET-loose-92e";  // a loose object in the project

// One project for the whole suite: five commits on main, the evaluation folder changing in three
// of them, a blob shared between the folder and src/, an annotated and a lightweight tag in the
// history, and a branch with a tag outside it. The first three commits are packed, the rest loose,
// so both ways of carrying an object are exercised.
class PrivateRepositoryTest : public ::testing::Test {
   protected:
    static void SetUpTestSuite() {
        root_ = new TempDir();
        setenv("HOME", root_->path().c_str(), 1);
        setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
        setenv("GIT_AUTHOR_NAME", "Tester", 1);
        setenv("GIT_AUTHOR_EMAIL", "tester@example.com", 1);
        setenv("GIT_COMMITTER_NAME", "Tester", 1);
        setenv("GIT_COMMITTER_EMAIL", "tester@example.com", 1);
        unsetenv("GIT_DIR");
        unsetenv("GIT_NO_REPLACE_OBJECTS");
        const fs::path p = project();
        fs::create_directories(p);
        ok(p, "git init -q -b main && git config uploadpack.allowFilter true");
        write(p / ".tea/evaluation.json", "{\"targets\": []}\n");
        write(p / ".tea/secret.txt", std::string(kSecretOld) + "\n");
        write(p / ".tea/shared.txt", "shared between the folder and src\n");
        write(p / "src/shared.txt", "shared between the folder and src\n");
        write(p / "src/main.c", "int main(void) { return 0; }\n");
        ok(p, "git add -A && git commit -qm 'first'");
        write(p / "src/main.c", "int main(void) { return 1; }\n");
        write(p / ".tea/secret.txt", std::string(kSecretOld) + " v2\n");
        ok(p, "git commit -qam 'second' && git tag -a v1.0 -m 'first release notes'");
        write(p / "docs/readme.md", "docs\n");
        ok(p, "git add -A && git commit -qm 'third' && git tag light-1 && git repack -adq");
        write(p / ".tea/secret.txt", std::string(kSecretLoose) + "\n");
        write(p / "src/main.c", "int main(void) { return 2; }\n");
        ok(p, "git commit -qam 'fourth'");
        ok(p,
           "git checkout -qb feature && echo f > feature.txt && git add feature.txt && "
           "git commit -qm feature && git tag feature-tag && git checkout -q main");
        write(p / "src/main.c", "int main(void) { return 3; }\n");
        ok(p, "git commit -qam 'fifth'");
    }
    static void TearDownTestSuite() {
        delete root_;
        root_ = nullptr;
    }

    static fs::path project() { return root_->path() / "project"; }

    tea::git::PrivateRepositoryResult build(const fs::path &destination,
                                            const fs::path &from = project(),
                                            const std::string &commit = "main",
                                            const fs::path &cache = {}) {
        return tea::git::build_private_repository(
            PrivateRepositoryRequest{from, commit, {".tea"}, destination}, cache);
    }

    static TempDir *root_;
    TempDir dir_;
};

TempDir *PrivateRepositoryTest::root_ = nullptr;

TEST_F(PrivateRepositoryTest, CommitAndTagIdsAreTheProjectsOwn) {
    const fs::path priv = dir_.path() / "private";
    const auto result = build(priv);
    EXPECT_EQ(result.commit_id, trim(ok(project(), "git rev-parse main")));
    EXPECT_EQ(ok(priv, "git rev-list HEAD"), ok(project(), "git rev-list main"));
    EXPECT_EQ(result.commits, 5U);
    EXPECT_EQ(result.tags, 2U);
    EXPECT_TRUE(result.missing_objects.empty());
    const std::string format = "git for-each-ref refs/tags --format='%(objectname) %(refname)'";
    EXPECT_EQ(ok(priv, format), ok(project(), format + " | grep -v feature-tag"));
    EXPECT_EQ(trim(ok(priv, "git cat-file -t v1.0")), "tag");
    EXPECT_NE(ok(priv, "git tag -l -n9 v1.0").find("first release notes"), std::string::npos);
    EXPECT_EQ(trim(ok(priv, "cat HEAD")), result.commit_id);  // detached
    // The pack is sound; fsck would only report the withheld trees as missing.
    ok(priv, "git verify-pack objects/pack/*.idx");
}

TEST_F(PrivateRepositoryTest, EvaluationFolderReadsAsEmptyTree) {
    const fs::path priv = dir_.path() / "private";
    build(priv);
    EXPECT_EQ(ok(priv, "git show HEAD:.tea"), "tree HEAD:.tea\n\n");
    EXPECT_EQ(ok(priv, "git show HEAD~4:.tea"), "tree HEAD~4:.tea\n\n");
    EXPECT_EQ(ok(priv, "git ls-tree -r HEAD .tea"), "");
    EXPECT_EQ(ok(priv, "git ls-tree -r HEAD~4 | grep -c '\\.tea/' || true"), "0\n");
    EXPECT_EQ(ok(priv, "git log -p --format=%H HEAD | grep -c GRADING || true"), "0\n");
    EXPECT_NE(sh(priv, "git show HEAD~4:.tea/secret.txt").status, 0);
    // Positive control: the project itself shows the folder.
    EXPECT_NE(ok(project(), "git ls-tree -r main .tea").find("secret.txt"), std::string::npos);
    EXPECT_NE(ok(project(), "git show main~4:.tea/secret.txt").find(kSecretOld), std::string::npos);
    // Turning replacement off reveals nothing either: the content is not there.
    const Output raw = sh(priv, "GIT_NO_REPLACE_OBJECTS=1 git ls-tree -r HEAD .tea");
    EXPECT_NE(raw.status, 0);
    EXPECT_EQ(raw.text.find("secret.txt"), std::string::npos);
}

TEST_F(PrivateRepositoryTest, SecretBlobsAreAbsentFromThePrivateObjects) {
    const fs::path priv = dir_.path() / "private";
    build(priv);
    const std::vector<std::string> secrets = {
        trim(ok(project(), "git rev-parse main~4:.tea/secret.txt")),
        trim(ok(project(), "git rev-parse main~3:.tea/secret.txt")),
        trim(ok(project(), "git rev-parse main:.tea/secret.txt")),
        trim(ok(project(), "git rev-parse main:.tea/evaluation.json")),
        trim(ok(project(), "git rev-parse main:.tea")),
    };
    const std::string private_ids = ok(priv, "git verify-pack -v objects/pack/*.idx");
    const std::string project_ids = ok(project(), "git verify-pack -v .git/objects/pack/*.idx");
    for (const auto &id : secrets) {
        EXPECT_NE(sh(priv, "git cat-file -e " + id).status, 0) << id;
        EXPECT_EQ(sh(project(), "git cat-file -e " + id).status, 0) << id;  // control
        EXPECT_EQ(private_ids.find(id), std::string::npos) << id;
    }
    // Control for the listing: the project's pack holds the packed secret.
    EXPECT_NE(project_ids.find(secrets[0]), std::string::npos);
    // Nothing written loose, and no object of any kind holds the secret text once inflated.
    EXPECT_EQ(ok(priv, "find objects -type f ! -path 'objects/pack/*' | wc -l"), "0\n");
    const std::string all =
        "git cat-file --batch-all-objects --batch | grep -c GRADING-SECRET || true";
    EXPECT_EQ(ok(priv, all), "0\n");
    EXPECT_NE(ok(project(), all), "0\n");
}

TEST_F(PrivateRepositoryTest, BlobSharedWithAnotherPathStays) {
    const fs::path priv = dir_.path() / "private";
    build(priv);
    EXPECT_EQ(ok(priv, "git show HEAD:src/shared.txt"), "shared between the folder and src\n");
    EXPECT_EQ(ok(priv, "git rev-parse HEAD:src/shared.txt"),
              ok(project(), "git rev-parse main:.tea/shared.txt"));
}

TEST_F(PrivateRepositoryTest, BranchesRemotesAndOutsideTagsAreNotCarried) {
    const fs::path priv = dir_.path() / "private";
    build(priv);
    EXPECT_EQ(ok(priv, "git for-each-ref refs/heads refs/remotes"), "");
    EXPECT_EQ(sh(priv, "git rev-parse -q --verify feature-tag").status, 1);
    EXPECT_NE(
        sh(priv, "git cat-file -e $(git -C '" + project().string() + "' rev-parse feature)").status,
        0);
    const std::string config = ok(priv, "git config --list --local");
    EXPECT_EQ(config.find("remote."), std::string::npos) << config;
    EXPECT_EQ(config.find("partialclone"), std::string::npos) << config;
    EXPECT_NE(config.find("core.bare=true"), std::string::npos) << config;
    EXPECT_NE(config.find("core.repositoryformatversion=0"), std::string::npos) << config;
}

TEST_F(PrivateRepositoryTest, AttachedCheckoutIsCleanAndReadsHistory) {
    const fs::path priv = dir_.path() / "private";
    const fs::path checkout = dir_.path() / "checkout";
    build(priv);
    tea::git::attach_worktree(checkout, priv);
    EXPECT_EQ(trim(ok(checkout, "cat .git")), "gitdir: " + fs::canonical(priv).string());
    EXPECT_FALSE(fs::exists(checkout / ".tea"));
    EXPECT_TRUE(fs::exists(checkout / "src/main.c"));
    EXPECT_EQ(ok(checkout, "git status --porcelain"), "");
    EXPECT_EQ(ok(checkout, "git diff-files --name-only"), "");  // stat data recorded too
    EXPECT_EQ(ok(checkout, "git log --all --oneline | wc -l"),
              ok(project(), "git rev-list --count main"));
    const Output grep = sh(checkout, "git grep GRADING $(git rev-list --all)");
    EXPECT_EQ(grep.status, 1) << grep.text;
    EXPECT_EQ(sh(project(), "git grep GRADING $(git rev-list main)").status, 0);  // control
    EXPECT_EQ(trim(ok(checkout, "git describe --tags")).rfind("light-1-2-g", 0), 0U);
    EXPECT_EQ(ok(checkout, "git tag -l"), "light-1\nv1.0\n");
    EXPECT_NE(ok(checkout, "git blame src/main.c").find("return 3"), std::string::npos);
    EXPECT_NE(ok(checkout, "git diff HEAD~3 --stat").find("src/main.c"), std::string::npos);
    ok(checkout, "git log -p --oneline >/dev/null && git show HEAD:.tea");
    EXPECT_EQ(trim(ok(checkout, "git rev-parse --show-toplevel")),
              fs::canonical(checkout).string());
}

TEST_F(PrivateRepositoryTest, PartialCloneBuildsAndNeverFetches) {
    const fs::path partial = dir_.path() / "partial";
    ok(dir_.path(), "git clone -q --filter=blob:none file://" + project().string() + " partial");
    ASSERT_NE(ok(partial, "git config --list --local").find("partialclone"), std::string::npos);
    const std::string old_blob = trim(ok(project(), "git rev-parse main~1:src/main.c"));
    // `git cat-file -e` would fetch the blob lazily; listing with --missing=print does not.
    const std::string still_missing =
        "git rev-list --objects --missing=print HEAD | grep -qx '?" + old_blob + "'";
    ASSERT_EQ(sh(partial, still_missing).status, 0);  // really not on disk

    const fs::path priv = dir_.path() / "private";
    const fs::path checkout = dir_.path() / "checkout";
    const auto result = build(priv, partial, "HEAD");
    EXPECT_EQ(result.commit_id, trim(ok(project(), "git rev-parse main")));
    EXPECT_EQ(result.commits, 5U);
    std::set<std::string> missing(result.missing_objects.begin(), result.missing_objects.end());
    EXPECT_EQ(missing.count(old_blob), 1U);
    const std::string config = ok(priv, "git config --list --local");
    EXPECT_EQ(config.find("remote."), std::string::npos) << config;
    EXPECT_EQ(config.find("partialclone"), std::string::npos) << config;

    tea::git::attach_worktree(checkout, priv);
    EXPECT_EQ(ok(checkout, "git status --porcelain"), "");
    const Output log = sh(checkout, "git log -p");
    EXPECT_NE(log.status, 0);
    EXPECT_NE(log.text.find(old_blob.substr(0, 7)), std::string::npos) << log.text;
    // No fetch happened: the object is still absent from both repositories.
    EXPECT_EQ(sh(partial, still_missing).status, 0);
    EXPECT_NE(sh(priv, "git cat-file -e " + old_blob).status, 0);
}

TEST_F(PrivateRepositoryTest, ReadOnlyPrivateRepositoryRefusesCommit) {
    // Root ignores permission bits, so the commit runs as an unprivileged user that owns both.
    const std::string as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
    const std::string commit =
        as_nobody + "sh -c 'echo change > new.txt && git add new.txt && git commit -qm change'";
    for (const bool read_only : {true, false}) {
        const fs::path priv = dir_.path() / (read_only ? "ro-private" : "rw-private");
        const fs::path checkout = dir_.path() / (read_only ? "ro-checkout" : "rw-checkout");
        build(priv);
        tea::git::attach_worktree(checkout, priv);
        ok(dir_.path(), "chown -R 65534:65534 '" + priv.string() + "' '" + checkout.string() + "'");
        if (read_only) ok(dir_.path(), "chmod -R a-w '" + priv.string() + "'");
        const Output out = sh(checkout, commit);
        const std::string count = ok(checkout, as_nobody + "git rev-list --count HEAD");
        if (read_only) {
            EXPECT_NE(out.status, 0) << out.text;
            EXPECT_EQ(count, "5\n");
        } else {
            EXPECT_EQ(out.status, 0) << out.text;  // positive control
            EXPECT_EQ(count, "6\n");
        }
    }
}

TEST_F(PrivateRepositoryTest, CacheReusesTheBuiltRepository) {
    const fs::path cache = dir_.path() / "cache";
    const auto first = build(dir_.path() / "one", project(), "main", cache);
    const auto second = build(dir_.path() / "two", project(), "main", cache);
    EXPECT_FALSE(first.reused_from_cache);
    EXPECT_TRUE(second.reused_from_cache);
    EXPECT_EQ(second.commit_id, first.commit_id);
    EXPECT_EQ(second.trees, first.trees);
    EXPECT_EQ(second.blobs, first.blobs);
    EXPECT_EQ(ok(dir_.path() / "two", "git log --oneline | wc -l"), "5\n");
    EXPECT_EQ(ok(dir_.path() / "two", "git show HEAD:.tea"), "tree HEAD:.tea\n\n");
    // A different withheld set is a different entry.
    const auto other = tea::git::build_private_repository(
        PrivateRepositoryRequest{project(), "main", {".tea", "docs"}, dir_.path() / "three"},
        cache);
    EXPECT_FALSE(other.reused_from_cache);
    EXPECT_EQ(ok(dir_.path() / "three", "git ls-tree -r HEAD docs"), "");
}

TEST_F(PrivateRepositoryTest, UnknownCommitIsRefusedAndNothingIsLeft) {
    const fs::path priv = dir_.path() / "private";
    try {
        build(priv, project(), "no-such-revision");
        FAIL() << "expected an error";
    } catch (const PrivateRepositoryError &error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("no-such-revision"), std::string::npos) << message;
        EXPECT_NE(message.find(project().string()), std::string::npos) << message;
    }
    EXPECT_TRUE(fs::is_empty(dir_.path()));
    EXPECT_THROW(build(priv, project(), "--output=/tmp/x"), PrivateRepositoryError);
    EXPECT_THROW(build(priv, dir_.path(), "main"), PrivateRepositoryError);  // not a repository
    EXPECT_TRUE(fs::is_empty(dir_.path()));
}

// A clone that borrows its objects (git clone --shared) reads them from another repository's
// object directory, which a .git planted by a target could name as well: no private repository is
// built from it, and the refusal says how to make the objects the clone's own. Control: once
// they are, the same clone builds.
TEST_F(PrivateRepositoryTest, AProjectBorrowingObjectsIsRefused) {
    const fs::path clone = dir_.path() / "shared";
    ok(dir_.path(), "git clone -q --shared '" + project().string() + "' shared");
    const fs::path priv = dir_.path() / "private";
    try {
        build(priv, clone);
        FAIL() << "expected a refusal";
    } catch (const PrivateRepositoryError &error) {
        const std::string message = error.what();
        EXPECT_NE(message.find((clone / ".git/objects/info/alternates").string() + ": borrows"),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find("git repack -a -d"), std::string::npos) << message;
    }
    EXPECT_FALSE(fs::exists(priv));
    ok(clone, "git repack -a -d -q && rm .git/objects/info/alternates");
    EXPECT_EQ(build(priv, clone).commit_id, trim(ok(project(), "git rev-parse main")));
}

TEST_F(PrivateRepositoryTest, ExistingDestinationIsRefusedUnchanged) {
    const fs::path priv = dir_.path() / "private";
    write(priv / "marker", "keep\n");
    EXPECT_THROW(build(priv), PrivateRepositoryError);
    std::size_t entries = 0;
    for (const auto &item : fs::directory_iterator(priv)) {
        (void)item;
        ++entries;
    }
    EXPECT_EQ(entries, 1U);
    EXPECT_EQ(ok(priv, "cat marker"), "keep\n");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator()), 1);
}

TEST_F(PrivateRepositoryTest, InvalidWithheldPathIsRefused) {
    for (const std::string path : {"../outside", "/abs", "", "a/./b"}) {
        EXPECT_THROW(tea::git::build_private_repository(PrivateRepositoryRequest{
                         project(), "main", {path}, dir_.path() / "private"}),
                     PrivateRepositoryError)
            << path;
    }
    EXPECT_TRUE(fs::is_empty(dir_.path()));
}

TEST_F(PrivateRepositoryTest, AttachRefusesNonEmptyCheckout) {
    const fs::path priv = dir_.path() / "private";
    const fs::path checkout = dir_.path() / "checkout";
    build(priv);
    write(checkout / "file", "x\n");
    EXPECT_THROW(tea::git::attach_worktree(checkout, priv), PrivateRepositoryError);
    EXPECT_FALSE(fs::exists(checkout / ".git"));
    EXPECT_EQ(ok(priv, "git config core.bare"), "true\n");
}

}  // namespace
