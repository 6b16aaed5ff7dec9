// docs/walkthrough.md as a reader follows it: every command of the page, exactly as written, in a
// fresh home, from a folder laid out as the repository's root (its examples, and the build's
// binaries where the page's PATH line looks for them); and each output the page shows compared
// with what the commands printed. A command that fails, or an output that drifted, fails here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "docs/marked_blocks.hpp"
#include "docs/shell_session.hpp"
#include "support/temp_dir.hpp"

namespace tea {
namespace {

namespace fs = std::filesystem;

const fs::path kPage = fs::path{TEA_SOURCE_DIR} / "docs" / "walkthrough.md";

TEST(Walkthrough, EveryCommandRunsAsWrittenAndPrintsWhatThePageShows) {
    const auto blocks = test::fenced_blocks(kPage);
    int commands = 0;
    for (const auto &block : blocks) {
        // A shell block is something the reader runs: none may be left out of the test.
        if (block.language == "sh") {
            EXPECT_EQ(block.marker, "run")
                << "walkthrough.md:" << block.line << ": a shell block not marked for the test";
            ++commands;
        }
    }
    ASSERT_GE(commands, 5) << "the page's set-up, check, preflight, run and score";

    const test::TempDir base{"tea-doc-walkthrough", fs::perms{0755}};
    const auto root = base / "repository";
    fs::create_directories(root / "build" / "release");
    fs::create_directory_symlink(fs::path{TEA_SOURCE_DIR} / "examples", root / "examples");
    fs::create_directory_symlink(fs::path{TEA_EVALUATE_BIN}.parent_path(),
                                 root / "build" / "release" / "bin");
    // A home as root's is: only its owner may enter it.
    const auto home = base / "home";
    fs::create_directory(home);
    fs::permissions(home, fs::perms::owner_all);
    const char *path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): no thread yet
    const auto env = test::fresh_user_environment(home, base / "private",
                                                  path != nullptr ? path : "/usr/bin:/bin");

    const auto session = test::run_page(kPage, blocks, root, env);
    ASSERT_EQ(session.status, 0) << "a command of the page failed at " << session.failed_block;
    for (const auto &problem : test::outputs_not_shown(kPage, blocks, session)) {
        ADD_FAILURE() << problem;
    }
}

}  // namespace
}  // namespace tea
