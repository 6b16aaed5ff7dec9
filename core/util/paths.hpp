// Path containment, decided lexically by whole components: "/a/bc" is not within "/a/b", and
// "/a/b/" is "/a/b". Neither path is resolved; callers pass real paths when links matter.
#pragma once

#include <algorithm>
#include <filesystem>
#include <iterator>

namespace tea {

// Whether path is dir or lies beneath it.
inline bool within(const std::filesystem::path &path, const std::filesystem::path &dir) {
    const auto d = dir.lexically_normal();
    const auto p = path.lexically_normal();
    auto [de, pe] = std::mismatch(d.begin(), d.end(), p.begin(), p.end());
    return de == d.end() || (std::next(de) == d.end() && de->empty());
}

}  // namespace tea
