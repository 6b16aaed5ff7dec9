#include "git/delta_base_cache.hpp"

namespace tea::git {

std::optional<PackObject> DeltaBaseCache::find(std::uint64_t offset) const {
    const auto it = objects_.find(offset);
    if (it == objects_.end()) return std::nullopt;
    return it->second;
}

void DeltaBaseCache::store(std::uint64_t offset, const PackObject &object) {
    if (!object.bytes) return;
    const std::size_t size = object.bytes->size();
    if (size > kLimit / 8 || !objects_.emplace(offset, object).second) return;
    order_.emplace_back(offset, size);
    bytes_ += size;
    while (bytes_ > kLimit && !order_.empty()) {
        objects_.erase(order_.front().first);
        bytes_ -= order_.front().second;
        order_.pop_front();
    }
}

}  // namespace tea::git
