// Writes one pack and its index into a pack directory. Every object's id is known before it is
// written (the history walk looked it up), so the index is built from the ids, offsets and CRCs
// gathered while writing, and no object has to be inflated again to hash it. The caller either
// copies an entry's stored bytes (append) or hands a whole object (append_whole_object).
#pragma once

#include <git2.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "git/pack_checksum.hpp"
#include "git/pack_index.hpp"
#include "util/fd.hpp"

namespace tea::git {

class PackWriter {
   public:
    // Starts pack_dir/tmp_pack, which must not exist, for exactly object_count objects.
    PackWriter(std::filesystem::path pack_dir, std::uint32_t object_count);

    // Starts the entry of object id; the bytes appended until the next entry are its entry.
    void begin_entry(const git_oid &id);
    void append(const unsigned char *data, std::size_t size);
    // An entry header: the type and the inflated size.
    void append_header(int type, std::uint64_t size);
    // The header and the compressed bytes of a whole object.
    void append_whole_object(git_object_t type, const void *data, std::size_t size);

    // Writes the trailer and the index, and gives both their final names,
    // pack_dir/pack-<checksum>.pack and .idx.
    void finish();

   private:
    static constexpr std::size_t kBufferSize = std::size_t{1} << 20;

    void end_entry();
    void flush();

    std::filesystem::path dir_;
    std::filesystem::path temp_;
    std::size_t expected_;
    UniqueFd fd_;
    PackChecksum checksum_;
    std::vector<unsigned char> buffer_;
    std::uint64_t written_ = 0;
    uLong crc_ = 0;
    bool in_entry_ = false;
    std::vector<PackIndexEntry> entries_;
};

}  // namespace tea::git
