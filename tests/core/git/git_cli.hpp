// The git CLI for the pack format tests: real git makes the packs the reader is tested on and
// checks the packs the writer makes. A fixed identity and date, and no system or user
// configuration, so every run makes the same objects.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace tea::test {

inline Outcome git_in(const std::filesystem::path &dir, const std::vector<std::string> &args) {
    std::vector<std::string> argv{"git", "-C", dir.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv,
               environment_with({"GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir.string(),
                                 "GIT_AUTHOR_NAME=Tester", "GIT_AUTHOR_EMAIL=t@example.com",
                                 "GIT_COMMITTER_NAME=Tester", "GIT_COMMITTER_EMAIL=t@example.com",
                                 "GIT_AUTHOR_DATE=2024-01-01T00:00:00Z",
                                 "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z"}));
}

// git's standard output, the test failing with git's own words when git fails.
inline std::string git_ok(const std::filesystem::path &dir, const std::vector<std::string> &args) {
    const Outcome outcome = git_in(dir, args);
    EXPECT_EQ(outcome.status, 0) << "git " << (args.empty() ? "" : args.front()) << ": "
                                 << outcome.err;
    return outcome.out;
}

inline std::string trimmed(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
}

}  // namespace tea::test
