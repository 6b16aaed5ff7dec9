#include "util/closest_match.hpp"

#include <gtest/gtest.h>

namespace tea {
namespace {

const std::vector<std::string> kSubcommands{"check",     "plugins", "exec",
                                            "preflight", "run",     "score"};

TEST(EditDistance, CountsInsertionsRemovalsReplacementsAndSwaps) {
    EXPECT_EQ(edit_distance("run", "run"), 0U);
    EXPECT_EQ(edit_distance("rnu", "run"), 1U);  // two neighbours swapped
    EXPECT_EQ(edit_distance("bakend", "backend"), 1U);
    EXPECT_EQ(edit_distance("backends", "backend"), 1U);
    EXPECT_EQ(edit_distance("bcakend", "backend"), 1U);
    EXPECT_EQ(edit_distance("sxore", "score"), 1U);
    EXPECT_EQ(edit_distance("", "abc"), 3U);
    EXPECT_EQ(edit_distance("abc", ""), 3U);
    EXPECT_EQ(edit_distance("interfaceID", "interfaceId"), 0U);  // case is not a letter
}

TEST(ClosestMatch, NamesTheCandidateATypoMeant) {
    EXPECT_EQ(closest_match("rnu", kSubcommands), "run");
    EXPECT_EQ(closest_match("chekc", kSubcommands), "check");
    EXPECT_EQ(closest_match("plugin", kSubcommands), "plugins");
    EXPECT_EQ(closest_match("Exec", kSubcommands), "exec");
    EXPECT_EQ(closest_match("ru", kSubcommands), "run");
    EXPECT_EQ(closest_match("maxElapsed", {"interfaceId", "maxElapsedMs", "target"}),
              "maxElapsedMs");
    EXPECT_EQ(closest_match("interfaceID", {"interfaceId", "kind"}), "interfaceId");
}

TEST(ClosestMatch, NamesNothingForAnotherWord) {
    EXPECT_EQ(closest_match("deploy", kSubcommands), std::nullopt);
    EXPECT_EQ(closest_match("swap", {"memory", "processes", "cgroup", "disk", "disk_bytes"}),
              std::nullopt);
    // A word is never "corrected" by replacing all of it: a letter is no misspelling of another.
    EXPECT_EQ(closest_match("x", {"y", "ab"}), std::nullopt);
    EXPECT_EQ(closest_match("ab", {"cd", "xy"}), std::nullopt);
    EXPECT_EQ(closest_match("anything", {}), std::nullopt);
    // The word itself is no suggestion.
    EXPECT_EQ(closest_match("run", {"run"}), std::nullopt);
}

TEST(ClosestMatch, TheFirstOfEquallyNearCandidates) {
    EXPECT_EQ(closest_match("cat", {"bat", "hat"}), "bat");
    EXPECT_EQ(closest_match("cat", {"hat", "bat"}), "hat");
    EXPECT_EQ(closest_match("backend", {"backends", "backend_"}), "backends");
}

TEST(DidYouMean, IsTheTailOfARefusal) {
    EXPECT_EQ(did_you_mean("rnu", kSubcommands), "; did you mean 'run'?");
    EXPECT_EQ(did_you_mean("deploy", kSubcommands), "");
    EXPECT_EQ(listed({"a", "b", "c"}), "a, b, c");
    EXPECT_EQ(listed({}), "");
}

}  // namespace
}  // namespace tea
