// The pages' tests compare what a page shows with what its commands print: an output that drifted
// is found (and the control: the same page, showing what was printed, passes).
#include "docs/marked_blocks.hpp"

#include <gtest/gtest.h>

#include "docs/shell_session.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea {
namespace {

TEST(MarkedBlocks, ReadsTheMarkerTheLanguageAndTheTextWithoutTheListsIndentation) {
    const test::TempDir dir;
    test::write_file((dir / "page.md").string(),
                     "# a page\n\n<!-- test: run -->\n```sh\necho one\n```\n\n"
                     "1. a step:\n\n   ```json\n   {\"a\": 1}\n\n   ```\n");
    const auto blocks = test::fenced_blocks(dir / "page.md");
    ASSERT_EQ(blocks.size(), 2U);
    EXPECT_EQ(blocks[0].marker, "run");
    EXPECT_EQ(blocks[0].language, "sh");
    EXPECT_EQ(blocks[0].text, "echo one\n");
    EXPECT_EQ(blocks[0].line, 4);
    EXPECT_EQ(blocks[1].marker, "");
    EXPECT_EQ(blocks[1].text, "{\"a\": 1}\n\n");

    test::write_file((dir / "open.md").string(), "```sh\necho never closed\n");
    EXPECT_THROW((void)test::fenced_blocks(dir / "open.md"), std::runtime_error);
}

TEST(MarkedBlocks, AnEllipsisStandsForAnyTextAndNothingElseDoes) {
    EXPECT_TRUE(test::shows_line("run …: 2 trials", "run 20260101T000000Z-abc: 2 trials"));
    EXPECT_TRUE(test::shows_line("…", ""));
    EXPECT_TRUE(test::shows_line("a … b … c", "a x b y c"));
    EXPECT_FALSE(test::shows_line("run …: 2 trials", "run x: 3 trials"));
    EXPECT_FALSE(test::shows_line("a…a", "a"));
    EXPECT_FALSE(test::shows_line("exact", "exact and more"));

    std::string why;
    EXPECT_TRUE(test::shows_in_order("one\nthree\n", "one\ntwo\nthree\n", &why));
    EXPECT_FALSE(test::shows_in_order("three\none\n", "one\ntwo\nthree\n", &why));
    EXPECT_EQ(why, "one");
    EXPECT_TRUE(test::shows_exactly("one\n…\n", "one\ntwo\n", &why));
    EXPECT_FALSE(test::shows_exactly("one\n", "one\ntwo\n", &why));
}

// A page whose output block says what its command no longer prints fails; the control is the same
// page showing what the command prints. A failing command names its block.
TEST(MarkedBlocks, AnOutputThePageShowsAndTheCommandNoLongerPrintsIsFound) {
    const test::TempDir dir;
    const auto page = dir / "page.md";
    const auto env = test::environment_with({});
    const auto check = [&](const std::string &shown) {
        test::write_file(page.string(),
                         "<!-- test: run -->\n```sh\ncd /\necho \"in $PWD\"\n```\n\n"
                         "<!-- test: output -->\n```\n" +
                             shown + "\n```\n\n<!-- test: run -->\n```sh\necho second\n```\n");
        const auto blocks = test::fenced_blocks(page);
        const auto session = test::run_page(page, blocks, dir.path(), env);
        EXPECT_EQ(session.status, 0) << session.failed_block;
        EXPECT_EQ(session.outputs.at(1), "second\n");
        return test::outputs_not_shown(page, blocks, session);
    };
    EXPECT_EQ(check("in /").size(), 0U);
    const auto drifted = check("in /somewhere/else");
    ASSERT_EQ(drifted.size(), 1U);
    EXPECT_NE(drifted[0].find("page.md:8: the page shows 'in /somewhere/else'"), std::string::npos)
        << drifted[0];

    test::write_file(page.string(),
                     "<!-- test: run -->\n```sh\ntrue\n```\n\n"
                     "<!-- test: run -->\n```sh\necho before\nfalse\necho after\n```\n");
    const auto failed = test::run_page(page, test::fenced_blocks(page), dir.path(), env);
    EXPECT_NE(failed.status, 0);
    EXPECT_NE(failed.failed_block.find("page.md:7:"), std::string::npos) << failed.failed_block;
    EXPECT_EQ(failed.outputs.at(1), "before\n");
}

}  // namespace
}  // namespace tea
