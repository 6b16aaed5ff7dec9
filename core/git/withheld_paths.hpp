// The folders withheld from the private repository, checked and held as a trie of path
// components, which the history walk follows down each commit's trees.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "git/object_id.hpp"

namespace tea::git {

struct PathNode {
    bool withheld = false;
    std::map<std::string, PathNode, std::less<>> children;
    OidSet visited;  // trees already walked at this position
};

// The paths joined with single slashes, sorted and without repeats. Throws std::invalid_argument
// for an absolute or empty path and for a "." or ".." component.
std::vector<std::string> normalize_withheld(const std::vector<std::string> &paths);

// The trie of normalized paths.
PathNode build_trie(const std::vector<std::string> &paths);

}  // namespace tea::git
