// A page's commands run as a reader runs them: the blocks marked `<!-- test: run -->` pasted in
// order into one shell, so what a block changes (the folder, a variable, PATH) holds for the
// blocks after it; and the blocks marked `<!-- test: output -->` compared with what the run block
// before them printed.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "docs/marked_blocks.hpp"

namespace tea::test {

// A user of their own: a fresh HOME (and configuration folder under it), a private root of the
// test's own, git that knows the user's name, and nothing of the developer's plugin path. `path`
// is the PATH the shell starts with.
std::vector<std::string> fresh_user_environment(const std::filesystem::path &home,
                                                const std::filesystem::path &private_root,
                                                const std::string &path);

struct SessionResult {
    int status = -1;                   // the shell's: the first command that failed ends it
    std::vector<std::string> outputs;  // per run block, stdout and stderr as one stream
    std::string failed_block;          // where the page is, when a command failed
};

// The page's run blocks, in one bash started in `cwd` with the exact environment `env`. Every
// command must succeed (the shell runs with errexit and pipefail).
SessionResult run_page(const std::filesystem::path &page, const std::vector<FencedBlock> &blocks,
                       const std::filesystem::path &cwd, const std::vector<std::string> &env);

// Each output block of the page that the run block before it did not print, line by line in
// order (other lines may come between): one sentence per block, naming the page's line.
std::vector<std::string> outputs_not_shown(const std::filesystem::path &page,
                                           const std::vector<FencedBlock> &blocks,
                                           const SessionResult &session);

}  // namespace tea::test
