// The host-unchanged detector (evaluation/host_unchanged.hpp): each change a target could make to
// a tree it must not touch is planted and named (the positive control); an untouched tree, read
// and with its times moved, compares equal.
#include "evaluation/host_unchanged.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::evaluation {
namespace {

namespace fs = std::filesystem;

std::string changes_text(const std::vector<ManifestChange> &changes) {
    std::string out;
    for (const auto &c : changes) {
        out += c.path + ": " + to_string(c.kind) + " " + c.what + "\n";
    }
    return out.empty() ? "(none)" : out;
}

bool has_change(const std::vector<ManifestChange> &changes, const std::string &path,
                ManifestChange::Kind kind, const std::string &what) {
    for (const auto &c : changes) {
        if (c.path == path && c.kind == kind && c.what.find(what) != std::string::npos) {
            return true;
        }
    }
    return false;
}

// A small evaluation folder: files, a directory, a link.
void fill(const fs::path &root) {
    fs::create_directories(root / "evaluator");
    test::write_file((root / "evaluation.json").string(), "{}\n");
    test::write_file((root / "evaluator/grade.sh").string(), "#!/bin/sh\necho pass\n");
    ::chmod((root / "evaluator/grade.sh").c_str(), 0755);
    test::write_file((root / "evaluator/answers.txt").string(), "42\n");
    fs::create_symlink("answers.txt", root / "evaluator/current");
}

// Negative: reading every file and moving its times changes nothing the manifest compares.
TEST(HostUnchanged, AnUntouchedTreeComparesEqualAfterReadsAndTouches) {
    const test::TempDir dir{"tea-host-unchanged"};
    fill(dir.path());
    const auto before = take_host_manifest(dir.path());
    ASSERT_TRUE(before.complete());
    EXPECT_EQ(before.entries.size(), 6U);  // ".", evaluation.json, evaluator and its three
    (void)test::read_file((dir.path() / "evaluator/answers.txt").string());
    const auto o = test::run({"touch", (dir.path() / "evaluator/answers.txt").string()},
                             test::environment_with({}));
    ASSERT_EQ(o.status, 0) << o.err;
    const auto changes = compare_host_manifests(before, take_host_manifest(dir.path()));
    EXPECT_TRUE(changes.empty()) << changes_text(changes);
}

// Positive control: every kind of change is named, with the fields that differ.
TEST(HostUnchanged, EachChangeIsNamed) {
    const test::TempDir dir{"tea-host-unchanged"};
    const auto &root = dir.path();
    fill(root);
    const auto before = take_host_manifest(root);
    test::write_file((root / "evaluation.json").string(), "[]\n");  // same size
    ::chmod((root / "evaluator/grade.sh").c_str(), 0777);
    fs::remove(root / "evaluator/answers.txt");
    fs::create_symlink("/etc/hostname", root / "evaluator/answers.txt");
    fs::remove(root / "evaluator/current");
    fs::create_symlink("grade.sh", root / "evaluator/current");
    test::write_file((root / "planted").string(), "");
    fs::create_directories(root / "new/dir");
    ::chmod(root.c_str(), 0750);
    const auto after = take_host_manifest(root);
    const auto changes = compare_host_manifests(before, after);
    using Kind = ManifestChange::Kind;
    EXPECT_TRUE(has_change(changes, "evaluation.json", Kind::changed, "content"))
        << changes_text(changes);
    EXPECT_TRUE(has_change(changes, "evaluator/grade.sh", Kind::changed, "mode 0755 -> 0777"))
        << changes_text(changes);
    EXPECT_TRUE(has_change(changes, "evaluator/answers.txt", Kind::changed, "type file -> link"))
        << changes_text(changes);
    EXPECT_TRUE(has_change(changes, "evaluator/current", Kind::changed, "link text"))
        << changes_text(changes);
    EXPECT_TRUE(has_change(changes, "planted", Kind::added, "file")) << changes_text(changes);
    EXPECT_TRUE(has_change(changes, "new", Kind::added, "directory")) << changes_text(changes);
    EXPECT_TRUE(has_change(changes, "new/dir", Kind::added, "directory")) << changes_text(changes);
    EXPECT_TRUE(has_change(changes, ".", Kind::changed, "mode")) << changes_text(changes);
    EXPECT_EQ(changes.size(), 8U) << changes_text(changes);
    const auto record = host_changes_record(before, after, changes);
    EXPECT_EQ(record["changes"].size(), 8U);
    EXPECT_EQ(record["unreached"], nlohmann::json::array());

    fs::remove_all(root / "new");
    const auto removed = compare_host_manifests(after, take_host_manifest(root));
    EXPECT_TRUE(has_change(removed, "new/dir", Kind::removed, "")) << changes_text(removed);
}

// A link is recorded by its text: what it points at, outside the tree, is never read, and a change
// there is no change of the tree.
TEST(HostUnchanged, LinksAreRecordedByTheirTextNeverFollowed) {
    const test::TempDir outside{"tea-host-outside"};
    const test::TempDir dir{"tea-host-unchanged"};
    test::write_file((outside.path() / "target").string(), "one\n");
    fs::create_symlink(outside.path() / "target", dir.path() / "link");
    fs::create_symlink(outside.path(), dir.path() / "dir-link");
    const auto before = take_host_manifest(dir.path());
    EXPECT_EQ(before.entries.size(), 3U);  // the root and its two links, nothing behind them
    test::write_file((outside.path() / "target").string(), "two\n");
    test::write_file((outside.path() / "more").string(), "");
    const auto changes = compare_host_manifests(before, take_host_manifest(dir.path()));
    EXPECT_TRUE(changes.empty()) << changes_text(changes);
}

// A file past the hashing bound is named, so a comparison of it is not taken for a proof.
TEST(HostUnchanged, AFilePastTheBoundIsNamedUnreached) {
    const test::TempDir dir{"tea-host-unchanged"};
    test::write_file((dir.path() / "big").string(), std::string(2048, 'x'));
    HostManifestLimits limits;
    limits.max_file_bytes = 1024;
    const auto manifest = take_host_manifest(dir.path(), limits);
    ASSERT_EQ(manifest.unreached.size(), 1U);
    EXPECT_NE(manifest.unreached[0].find("big: larger than the file bound of 1024"),
              std::string::npos)
        << manifest.unreached[0];
    // Control: within the bound it is hashed.
    limits.max_file_bytes = 4096;
    EXPECT_TRUE(take_host_manifest(dir.path(), limits).complete());
}

// The runtime's own subtree (an evaluation folder's runs/) is left out: what is written there is
// no change. Control: the same write beside it is one.
TEST(HostUnchanged, AnExcludedSubtreeIsNeitherHashedNorCompared) {
    const test::TempDir dir{"tea-host-unchanged"};
    fill(dir.path());
    fs::create_directories(dir.path() / "runs/one");
    HostManifestLimits limits;
    limits.tree.excluded = {"runs"};
    const auto before = take_host_manifest(dir.path(), limits);
    EXPECT_EQ(before.entries.count("runs"), 0U);
    test::write_file((dir.path() / "runs/one/run.json").string(), "{}\n");
    test::write_file((dir.path() / "evaluator/runs").string(),
                     "");  // the name, deeper: not left out
    const auto changes = compare_host_manifests(before, take_host_manifest(dir.path(), limits));
    ASSERT_EQ(changes.size(), 1U) << changes_text(changes);
    EXPECT_EQ(changes[0].path, "evaluator/runs");
}

// A guarded path that is a file (or a link) is a manifest of one entry, ".".
TEST(HostUnchanged, AFileRootIsItsOwnOneEntry) {
    const test::TempDir dir{"tea-host-unchanged"};
    const auto file = dir.path() / "guarded.txt";
    test::write_file(file.string(), "keep\n");
    fs::create_symlink("guarded.txt", dir.path() / "link");
    const auto before = take_host_manifest(file);
    ASSERT_TRUE(before.complete());
    ASSERT_EQ(before.entries.size(), 1U);
    EXPECT_EQ(before.entries.begin()->first, ".");
    const auto link = take_host_manifest(dir.path() / "link");
    EXPECT_EQ(link.entries.at(".").type, files::TreeEntryType::link);
    EXPECT_TRUE(compare_host_manifests(before, take_host_manifest(file)).empty());
    test::write_file(file.string(), "gone\n");
    const auto changes = compare_host_manifests(before, take_host_manifest(file));
    EXPECT_TRUE(has_change(changes, ".", ManifestChange::Kind::changed, "content"))
        << changes_text(changes);
}

#ifdef TEA_EVALUATE_BIN
// The detector against a real target: it tries to rewrite the grading material it is told of
// (a new answer, a mode, a planted file). Under bubblewrap with the folder withheld the manifest is
// unchanged; the control, the same call under the opt-out backend, is caught with each change
// named.
TEST(HostUnchanged, ATargetRewritingTheGradingMaterialIsCaughtUnlessConfined) {
    const test::TempDir base{"tea-host-exec", fs::perms{0755}};
    const fs::path grading = test::make_host_dir("tea-host-grading");
    fill(grading);
    const auto tamper = [&](const std::string &backend, bool withhold) {
        const auto workspace = base.path() / backend;
        fs::create_directories(workspace);
        std::vector<std::string> argv{TEA_EVALUATE_BIN, "exec",        "--backend",
                                      backend,          "--workspace", workspace.string()};
        if (withhold) argv.insert(argv.end(), {"--withhold", grading.string()});
        argv.insert(argv.end(),
                    {"--", "sh", "-c",
                     "echo 0 > \"$1\"/evaluator/answers.txt; chmod 0777 \"$1\"/evaluator/grade.sh;"
                     " touch \"$1\"/planted; true",
                     "sh", grading.string()});
        const auto before = take_host_manifest(grading);
        const auto o =
            test::run(argv, test::environment_with({"XDG_CONFIG_HOME=/nonexistent-tea-test",
                                                    "TEA_EVALUATE_PRIVATE_ROOT=" +
                                                        (base.path() / "private").string()}));
        EXPECT_EQ(o.status, 0) << o.err;
        return compare_host_manifests(before, take_host_manifest(grading));
    };
    const auto confined = tamper("bubblewrap", true);
    const auto opted_out = tamper("opt-out", false);
    std::error_code ec;
    fs::remove_all(grading, ec);
    EXPECT_TRUE(confined.empty()) << changes_text(confined);
    using Kind = ManifestChange::Kind;
    EXPECT_TRUE(has_change(opted_out, "evaluator/answers.txt", Kind::changed, "content"))
        << changes_text(opted_out);
    EXPECT_TRUE(has_change(opted_out, "evaluator/grade.sh", Kind::changed, "mode"))
        << changes_text(opted_out);
    EXPECT_TRUE(has_change(opted_out, "planted", Kind::added, "file")) << changes_text(opted_out);
}
#endif

}  // namespace
}  // namespace tea::evaluation
