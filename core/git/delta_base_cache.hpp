// Objects recently read from one pack, by the offset of their entry. Consecutive versions of a
// tree are stored as deltas on one another, so keeping what was just read saves inflating the
// same chain again and again. Holds at most 64 MiB, dropping the oldest first; an object larger
// than an eighth of that is never kept. Not thread-safe: one per pack reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>

#include "git/pack_object.hpp"

namespace tea::git {

class DeltaBaseCache {
   public:
    std::optional<PackObject> find(std::uint64_t offset) const;
    void store(std::uint64_t offset, const PackObject &object);

   private:
    static constexpr std::size_t kLimit = std::size_t{64} << 20;
    std::unordered_map<std::uint64_t, PackObject> objects_;
    std::deque<std::pair<std::uint64_t, std::size_t>> order_;
    std::size_t bytes_ = 0;
};

}  // namespace tea::git
