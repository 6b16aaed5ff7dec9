// Paths compared as the view's mounts take them: lexically, by whole components.
#pragma once

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <string>

namespace tea::bwrap {

// The path folded lexically, without a trailing separator ("/a/b/" names /a/b).
inline std::filesystem::path normal(const std::string &path) {
    auto p = std::filesystem::path{path}.lexically_normal();
    if (!p.has_filename() && p != p.root_path()) {
        p = p.parent_path();
    }
    return p;
}

// Whether `path` is `dir` or lies beneath it ("/usr2" is not beneath "/usr").
inline bool inside(const std::string &path, const std::string &dir) {
    if (dir.empty()) {
        return false;
    }
    const auto d = std::filesystem::path{dir}.lexically_normal();
    const auto p = std::filesystem::path{path}.lexically_normal();
    auto [de, pe] = std::mismatch(d.begin(), d.end(), p.begin(), p.end());
    return de == d.end() || (std::next(de) == d.end() && de->empty());
}

}  // namespace tea::bwrap
