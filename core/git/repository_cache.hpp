// Private repositories built earlier, kept by what they were built from (the project's common
// directory, the commit, the withheld paths and the tag tips), so a run's next trial copies one
// instead of walking the history again. The cache directory must be private to the runtime:
// whatever it holds is handed to targets.
#pragma once

#include <git2.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "git/history.hpp"
#include "git/private_repository.hpp"

namespace tea::git {

// The name of the entry for a build from these inputs.
std::string repository_cache_key(const std::filesystem::path &common_dir,
                                 const std::string &commit_hex,
                                 const std::vector<std::string> &withheld,
                                 const std::vector<TagRef> &tags);

// Copies the repository of a cache entry to destination (its pack files hard-linked when the file
// system allows); nullopt when the entry is unusable: absent, damaged, of another commit, or
// built while an object was missing that the project now holds.
std::optional<PrivateRepositoryResult> reuse_cached(const std::filesystem::path &entry,
                                                    git_repository *project,
                                                    const std::string &commit_hex,
                                                    const std::filesystem::path &destination);

// Stores a copy of the repository built at built, and its result, as cache_directory/key,
// replacing an unusable entry; another run storing the same entry first is not an error.
void store_in_cache(const std::filesystem::path &cache_directory, const std::string &key,
                    const std::filesystem::path &built, const PrivateRepositoryResult &result);

}  // namespace tea::git
