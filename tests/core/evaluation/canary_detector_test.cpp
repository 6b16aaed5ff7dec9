// The grading-string detector (evaluation/canary_detector.hpp): each test plants a canary where a
// leak would put it and sees the scan fire (the positive control), and shows a tree without one,
// or with one only behind a link, found clean.
#include "evaluation/canary_detector.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace tea::evaluation {
namespace {

namespace fs = std::filesystem;

std::string hits_text(const CanaryScan &scan) {
    std::string out;
    for (const auto &h : scan.hits) {
        out += h.where + " (" + to_string(h.in) + " at " + std::to_string(h.offset) + ")\n";
    }
    for (const auto &u : scan.unscanned) out += "unscanned: " + u + "\n";
    return out.empty() ? "(nothing)" : out;
}

bool has_hit(const CanaryScan &scan, const std::string &where, CanaryHit::In in,
             std::uint64_t offset) {
    for (const auto &h : scan.hits) {
        if (h.where == where && h.in == in && h.offset == offset) return true;
    }
    return false;
}

TEST(CanaryDetector, CanariesAreFreshAndOfOneShape) {
    const auto a = make_canary();
    const auto b = make_canary();
    EXPECT_NE(a, b);
    EXPECT_EQ(a.rfind("tea-canary-", 0), 0U) << a;
    EXPECT_EQ(a.size(), std::string{"tea-canary-"}.size() + 24) << a;
}

TEST(CanaryDetector, PlantingWritesANewFileAndNeverThroughWhatIsThere) {
    const test::TempDir dir{"tea-canary-plant"};
    const auto canary = make_canary();
    const auto planted = plant_canary(dir.path(), "answers.canary", canary);
    EXPECT_EQ(test::read_file(planted.string()), canary + "\n");
    const auto record = canary_record(canary, planted);
    EXPECT_EQ(record["canary"], canary);
    EXPECT_EQ(record["plantedIn"], planted.string());
    // A file already there, or a link in the name's place, is refused and left as it was.
    EXPECT_THROW((void)plant_canary(dir.path(), "answers.canary", make_canary()), Error);
    test::write_file((dir.path() / "victim").string(), "keep\n");
    fs::create_symlink(dir.path() / "victim", dir.path() / "link.canary");
    EXPECT_THROW((void)plant_canary(dir.path(), "link.canary", canary), Error);
    EXPECT_EQ(test::read_file((dir.path() / "victim").string()), "keep\n");
    EXPECT_THROW((void)plant_canary(dir.path(), "../up", canary), Error);
}

// Positive control: a canary in a binary file (cut across the scanner's reads), in a file's name
// and in a link's text is found, each named with its place. Negative: the same tree without them,
// holding a link to the planted file and a fifo, scans clean and does not block.
TEST(CanaryDetector, ATreeScanFindsEveryPlantAndNothingBehindALink) {
    const test::TempDir outside{"tea-canary-outside"};
    const test::TempDir tree{"tea-canary-tree"};
    const auto canary = make_canary();
    const auto planted = plant_canary(outside.path(), "answers", canary);
    fs::create_directories(tree.path() / "deep/er");
    test::write_file((tree.path() / "clean.txt").string(), "nothing here\n");
    fs::create_symlink(planted, tree.path() / "deep/to-answers");  // never followed
    ASSERT_EQ(::mkfifo((tree.path() / "deep/fifo").c_str(), 0644), 0);
    const auto clean = scan_tree_for_canaries(tree.path(), {canary});
    EXPECT_TRUE(clean.hits.empty()) << hits_text(clean);
    EXPECT_TRUE(clean.complete()) << hits_text(clean);

    // 65531: the canary starts 5 bytes before the scanner's first 64 KiB read ends.
    std::string binary(65531, '\0');
    binary += canary;
    binary += std::string(100, '\xff');
    test::write_file((tree.path() / "deep/er/blob.bin").string(), binary);
    test::write_file((tree.path() / ("x" + canary)).string(), "");
    fs::create_symlink("/nowhere/" + canary, tree.path() / "deep/pointer");
    const auto found = scan_tree_for_canaries(tree.path(), {make_canary(), canary});
    EXPECT_TRUE(has_hit(found, "deep/er/blob.bin", CanaryHit::In::content, 65531))
        << hits_text(found);
    EXPECT_TRUE(has_hit(found, "x" + canary, CanaryHit::In::name, 1)) << hits_text(found);
    EXPECT_TRUE(has_hit(found, "deep/pointer", CanaryHit::In::link_text, 9)) << hits_text(found);
    EXPECT_EQ(found.hits.size(), 3U) << hits_text(found);
}

// A file past the scan's bound is named as searched in part, never passed off as clean.
TEST(CanaryDetector, WhatTheBoundsLeaveUnsearchedIsNamed) {
    const test::TempDir tree{"tea-canary-bounds"};
    const auto canary = make_canary();
    test::write_file((tree.path() / "big").string(), std::string(4096, 'a') + canary);
    CanaryScanLimits limits;
    limits.max_file_bytes = 1024;
    const auto scan = scan_tree_for_canaries(tree.path(), {canary}, limits);
    EXPECT_TRUE(scan.hits.empty()) << hits_text(scan);
    ASSERT_EQ(scan.unscanned.size(), 1U) << hits_text(scan);
    EXPECT_NE(scan.unscanned[0].find("big: only its first 1024 bytes"), std::string::npos)
        << scan.unscanned[0];
    // Control: within the bound the same file's canary is found.
    limits.max_file_bytes = 8192;
    EXPECT_TRUE(has_hit(scan_tree_for_canaries(tree.path(), {canary}, limits), "big",
                        CanaryHit::In::content, 4096));
}

TEST(CanaryDetector, CapturedOutputIsSearchedAsAFileOrAsBytes) {
    const test::TempDir dir{"tea-canary-output"};
    const auto canary = make_canary();
    const auto out = dir.path() / "01-probe.stdout";
    test::write_file(out.string(), "answer: " + canary + "\n");
    EXPECT_TRUE(has_hit(scan_file_for_canaries(out, "01-probe.stdout", {canary}), "01-probe.stdout",
                        CanaryHit::In::content, 8));
    const auto bytes = scan_bytes_for_canaries("xx" + canary, "stream", {canary});
    ASSERT_EQ(bytes.size(), 1U);
    EXPECT_EQ(bytes[0].offset, 2U);
    // Negative: output without it; a link or a fifo in the file's place is not opened.
    test::write_file(out.string(), "answer: 42\n");
    EXPECT_TRUE(scan_file_for_canaries(out, "o", {canary}).hits.empty());
    EXPECT_TRUE(scan_bytes_for_canaries("answer: 42", "s", {canary}).empty());
    fs::create_symlink(out, dir.path() / "link");
    EXPECT_FALSE(scan_file_for_canaries(dir.path() / "link", "link", {canary}).complete());
    ASSERT_EQ(::mkfifo((dir.path() / "fifo").c_str(), 0644), 0);
    const auto fifo = scan_file_for_canaries(dir.path() / "fifo", "fifo", {canary});
    ASSERT_EQ(fifo.unscanned.size(), 1U);
    EXPECT_NE(fifo.unscanned[0].find("not a regular file"), std::string::npos);
}

#ifdef TEA_EVALUATE_BIN
// The detector against a real target: under bubblewrap, a target told where the grading material
// lies copies what it can of it into its workspace. With the material withheld the workspace scans
// clean; the control, the same call without --withhold, is caught with the file named.
TEST(CanaryDetector, ATargetCopyingTheGradingMaterialIsCaughtUnlessItIsWithheld) {
    const test::TempDir base{"tea-canary-exec", fs::perms{0755}};
    // Outside the host's temp directories, which a confined target sees as its call's own.
    const fs::path grading = test::make_host_dir("tea-canary-grading");
    const auto canary = make_canary();
    (void)plant_canary(grading, "answers.txt", canary);
    const auto copy = [&](bool withhold) {
        const auto workspace = base.path() / (withhold ? "withheld" : "shown");
        fs::create_directories(workspace);
        ::chmod(workspace.c_str(), 0777);
        std::vector<std::string> argv{TEA_EVALUATE_BIN, "exec",        "--backend",
                                      "bubblewrap",     "--workspace", workspace.string()};
        if (withhold) argv.insert(argv.end(), {"--withhold", grading.string()});
        argv.insert(argv.end(), {"--", "sh", "-c",
                                 "cat \"$1\"/answers.txt > copied.txt; cp -r \"$1\" stolen; true",
                                 "sh", grading.string()});
        const auto o =
            test::run(argv, test::environment_with({"XDG_CONFIG_HOME=/nonexistent-tea-test",
                                                    "TEA_EVALUATE_PRIVATE_ROOT=" +
                                                        (base.path() / "private").string()}));
        EXPECT_EQ(o.status, 0) << o.err;
        return scan_tree_for_canaries(workspace, {canary});
    };
    const auto withheld = copy(true);
    const auto shown = copy(false);
    std::error_code ec;
    fs::remove_all(grading, ec);
    EXPECT_TRUE(withheld.hits.empty()) << hits_text(withheld);
    EXPECT_TRUE(withheld.complete()) << hits_text(withheld);
    EXPECT_TRUE(has_hit(shown, "copied.txt", CanaryHit::In::content, 0)) << hits_text(shown);
    EXPECT_TRUE(has_hit(shown, "stolen/answers.txt", CanaryHit::In::content, 0))
        << hits_text(shown);
}
#endif

}  // namespace
}  // namespace tea::evaluation
