// Run ids and the latest run of a runs folder: ids sort by start time, so the greatest run id is
// the run that started last, runs of the same second included.
#include "evaluation/run_records.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "evaluation/trials.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::evaluation {
namespace {

namespace fs = std::filesystem;

TEST(RunIds, IdsMadeOneAfterAnotherSortInTheOrderMade) {
    std::vector<std::string> made;
    for (int i = 0; i < 20; ++i) {
        made.push_back(new_run_id());
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
    for (const auto &id : made) EXPECT_TRUE(is_run_id(id)) << id;
    auto sorted = made;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, made);
}

TEST(RunIds, TheFormIsTheTimeToTheMicrosecondAndARandomPart) {
    EXPECT_TRUE(is_run_id("20261129T221500.123456Z-a1b2c3"));
    EXPECT_TRUE(is_run_id("20261129T221500Z-a1b2c3"));  // as made before the microseconds
    for (const char *name : {"", "pristine", "20261129T221500.123456Z-", "20261129T221500.12Z-a",
                             "20261129T221500.123456Z-a/b", "2026112T221500Z-a1b2c3",
                             "20261129T221500.123456Z_a1b2c3", "x20261129T221500Z-a1b2c3"}) {
        EXPECT_FALSE(is_run_id(name)) << name;
    }
}

TEST(LatestRun, TheGreatestRunIdIsTheLatestAndNothingElseIsARun) {
    test::TempDir dir{"tea-latest-run"};
    const auto runs = dir.path() / "runs";
    EXPECT_FALSE(latest_run(runs));  // no folder
    fs::create_directories(runs);
    EXPECT_FALSE(latest_run(runs));  // an empty one
    fs::create_directories(runs / "20261129T221500.999999Z-zzzzzz");
    fs::create_directories(runs / "20261129T221501.000001Z-aaaaaa");
    fs::create_directories(runs / "pristine");                               // not a run id
    test::write_file((runs / "20261129T221502.000000Z-file").string(), "");  // not a folder
    fs::create_directory_symlink(runs / "pristine", runs / "20261129T221503.000000Z-link");
    const auto latest = latest_run(runs);
    ASSERT_TRUE(latest);
    EXPECT_EQ(latest->filename(), "20261129T221501.000001Z-aaaaaa");
}

}  // namespace
}  // namespace tea::evaluation
