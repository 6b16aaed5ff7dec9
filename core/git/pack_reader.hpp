// The project's packs, read in place (pack and index mapped, never copied) so that the history
// walk reads commits, trees and tags without libgit2's copies, and the private pack can take an
// entry's bytes as they are stored, without inflating them.
//
// Everything here reads bytes the project's repository holds. A reader that cannot make sense of
// a pack (another index version, a damaged entry, a chain it will not follow) answers nullopt,
// and the caller reads the object through libgit2 instead, which reports the damage.
#pragma once

#include <git2.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "git/delta_base_cache.hpp"
#include "git/mapped_file.hpp"
#include "git/pack_index.hpp"
#include "git/pack_object.hpp"

namespace tea::git {

// The whole object a zlib stream inflates to, which must be exactly expected bytes long. The
// memory taken follows what the stream makes, never what expected claims.
std::optional<Bytes> inflate_exact(const unsigned char *data, std::size_t size,
                                   std::uint64_t expected);

// One pack and its version 2 index.
class SourcePack {
   public:
    // The pack beside idx_path (same name, .pack), both mapped; nullopt when either is missing,
    // a link, or not a pack and version 2 index that agree on the number of objects.
    static std::optional<SourcePack> open(const std::filesystem::path &idx_path);
    // The same over bytes held elsewhere, which must outlive the SourcePack.
    static std::optional<SourcePack> borrow(std::span<const unsigned char> idx,
                                            std::span<const unsigned char> pack);

    // The index position of oid.
    std::optional<std::uint32_t> find(const git_oid &oid) const { return index_.find(oid); }

    // Parses the entry at index position pos and checks it against the CRC the index records, as
    // git does before copying an entry unchanged; nullopt when it does not match (the object is
    // then read through libgit2, which reports the damage).
    std::optional<PackEntry> entry(std::uint32_t pos);

    // The object stored at index position pos, deltas resolved; nullopt when it cannot be read
    // from this pack alone.
    std::optional<PackObject> read(std::uint32_t pos) { return read_at(index_.offset(pos)); }

    // The id of the entry that starts at offset (an OFS_DELTA's base).
    std::optional<git_oid> id_at_offset(std::uint64_t at);

    const unsigned char *pack_data() const { return pack_.data(); }
    const PackIndex &index() const { return index_; }
    std::size_t size() const { return index_.count(); }

   private:
    SourcePack(std::optional<MappedFile> idx_file, std::optional<MappedFile> pack_file,
               PackIndex index, std::span<const unsigned char> pack)
        : idx_file_(std::move(idx_file)),
          pack_file_(std::move(pack_file)),
          index_(index),
          pack_(pack) {}

    std::optional<PackEntry> parse_entry(std::uint64_t at_offset);
    std::optional<PackObject> read_at(std::uint64_t at);
    void build_offset_order();

    // Owners of the mapped bytes when opened from files; index_ and pack_ point into them.
    std::optional<MappedFile> idx_file_;
    std::optional<MappedFile> pack_file_;
    PackIndex index_;
    std::span<const unsigned char> pack_;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> sorted_;  // (offset, position)
    DeltaBaseCache cache_;
};

// Every pack of an objects directory that SourcePack reads, in the order of their names.
class SourcePacks {
   public:
    explicit SourcePacks(const std::filesystem::path &objects_dir);

    struct Location {
        std::size_t pack;
        std::uint32_t pos;
    };
    std::optional<Location> find(const git_oid &oid) const;
    SourcePack &pack(std::size_t i) { return packs_[i]; }
    std::size_t object_count() const;
    std::optional<PackObject> read(const git_oid &oid);

   private:
    std::vector<SourcePack> packs_;
};

}  // namespace tea::git
