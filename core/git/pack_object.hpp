// What a pack holds: the parsed header of an entry, and an object read from it with its deltas
// applied.
#pragma once

#include <git2.h>

#include <cstdint>
#include <memory>

#include "git/delta.hpp"

namespace tea::git {

// Entry types 1..4 are whole objects (commit, tree, blob, tag), 6 and 7 deltas on a base named
// by its distance back in the pack or by its id.
constexpr int kPackOfsDelta = 6;
constexpr int kPackRefDelta = 7;

struct PackEntry {
    int type = 0;              // 1..4 for whole objects, 6/7 for deltas
    std::uint64_t size = 0;    // inflated size (of the delta, for deltas)
    std::uint64_t offset = 0;  // of the entry header
    std::uint64_t data = 0;    // of the compressed data
    std::uint64_t end = 0;     // one past the compressed data
    std::uint64_t base = 0;    // OFS_DELTA: offset of the base entry
    git_oid base_id{};         // REF_DELTA: the base's id
};

struct PackObject {
    int type = 0;  // 1 commit, 2 tree, 3 blob, 4 tag
    std::shared_ptr<const Bytes> bytes;
};

}  // namespace tea::git
