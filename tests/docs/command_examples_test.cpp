// Every command example of docs/ is either run by a test or marked as an illustration: a shell
// block, or a block showing a "$ " prompt, carries a "<!-- test: … -->" comment on a page a test
// runs, or "<!-- illustration -->". A command a page adds without either fails here, and so does a
// page whose marked blocks no test reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "docs/marked_blocks.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea {
namespace {

namespace fs = std::filesystem;

const fs::path kSource{TEA_SOURCE_DIR};

// The pages whose marked blocks a test runs, and that test's source, which names the page.
const std::map<std::string, std::string> kPagesRunByTests = {
    {"walkthrough.md", "tests/docs/walkthrough_test.cpp"},
    {"evaluation-format.md", "tests/docs/evaluation_format_test.cpp"},
    {"configuration.md", "tests/docs/configuration_test.cpp"},
    {"packaging.md", "tests/packaging/packages_test.cpp"},
};

// One sentence per command example of the page that no test runs and no marker calls an
// illustration.
std::vector<std::string> commands_not_run(const fs::path &page,
                                          const std::map<std::string, std::string> &run_by) {
    std::vector<std::string> problems;
    const auto where = [&](const test::FencedBlock &b) {
        return page.filename().string() + ":" + std::to_string(b.line) + ": ";
    };
    for (const auto &block : test::fenced_blocks(page)) {
        if (!test::is_command_example(block) || block.illustration) {
            continue;
        }
        if (block.marker.empty()) {
            problems.push_back(where(block) +
                               "a command example neither run by a test (<!-- test: run -->) nor "
                               "marked <!-- illustration -->");
        } else if (!run_by.contains(page.filename().string())) {
            problems.push_back(where(block) + "marked for a test, but no test runs this page");
        }
    }
    return problems;
}

TEST(CommandExamples, EveryCommandOfDocsIsRunByATestOrAnIllustration) {
    int pages = 0;
    for (const auto &entry : fs::directory_iterator{kSource / "docs"}) {
        if (entry.path().extension() != ".md") {
            continue;
        }
        ++pages;
        for (const auto &problem : commands_not_run(entry.path(), kPagesRunByTests)) {
            ADD_FAILURE() << problem;
        }
    }
    EXPECT_GE(pages, 10);
    for (const auto &[page, source] : kPagesRunByTests) {
        const auto text = test::read_file((kSource / source).string());
        EXPECT_NE(text.find(page), std::string::npos) << source << " does not name " << page;
    }
}

// The control: an unmarked prompt and an unmarked shell block are found, an illustration and a
// marked block on a page a test runs are not, and a marked block on a page no test runs is.
TEST(CommandExamples, FindsAnUnmarkedCommandAndAcceptsTheMarkedOnes) {
    const test::TempDir dir;
    const auto page = dir / "page.md";
    test::write_file(page.string(),
                     "```\n$ tea-evaluate plugins\n```\n\n"
                     "```sh\ntea-evaluate check .tea\n```\n\n"
                     "<!-- illustration -->\n```sh\ncmake --install build\n```\n\n"
                     "<!-- test: run -->\n```sh\ntea-evaluate run .tea\n```\n\n"
                     "```\nbin/wordcount   the target\n```\n");
    const auto problems = commands_not_run(page, {{"page.md", "a test"}});
    ASSERT_EQ(problems.size(), 2U);
    EXPECT_TRUE(problems[0].starts_with("page.md:1: a command example")) << problems[0];
    EXPECT_TRUE(problems[1].starts_with("page.md:5: a command example")) << problems[1];
    const auto unrun = commands_not_run(page, {});
    ASSERT_EQ(unrun.size(), 3U);
    EXPECT_EQ(unrun[2], "page.md:15: marked for a test, but no test runs this page");
}

}  // namespace
}  // namespace tea
