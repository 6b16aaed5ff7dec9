// libFuzzer target for what the private repository reads of the project's packs: the version 2
// index, the pack's entry headers, their zlib streams and delta chains (pack_reader.hpp), and
// git's delta format on its own (delta.hpp), which a pack hides behind zlib.
//
// An input is one byte that picks the reader (even: an index and its pack; odd: a delta's base
// and the delta), four bytes (little-endian) giving the length of the first part, then the first
// part and the second. Each part is copied into a buffer of exactly its size, so a read past the
// end of either is caught by AddressSanitizer. Besides "never crash", the target checks what the
// private pack relies on: an entry lies inside the pack, a delta's base lies before it, an object
// read has a whole-object type, and a delta makes exactly the size it announces. Built with
// TEA_FUZZ_REPLAY_MAIN it is a plain program that replays a corpus, so any compiler exercises the
// same checks.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "git/delta.hpp"
#include "git/object_id.hpp"
#include "git/pack_reader.hpp"

namespace {

using namespace tea::git;

void require(bool holds, const char *what) {
    if (!holds) {
        std::fprintf(stderr, "invariant broken: %s\n", what);
        std::abort();
    }
}

std::optional<std::uint64_t> varint(std::span<const unsigned char> bytes, std::size_t &at) {
    std::uint64_t value = 0;
    for (int shift = 0; at < bytes.size() && shift <= 57; shift += 7) {
        const unsigned char c = bytes[at++];
        value |= std::uint64_t{c & 0x7fU} << shift;
        if ((c & 0x80) == 0) return value;
    }
    return std::nullopt;
}

void check_delta(std::span<const unsigned char> base, std::span<const unsigned char> delta) {
    const auto result = apply_delta(base, delta);
    if (!result) return;
    std::size_t at = 0;
    const auto base_size = varint(delta, at);
    const auto result_size = varint(delta, at);
    require(base_size && *base_size == base.size(), "a delta applies only to its base's size");
    require(result_size && *result_size == result->size(), "a delta makes the size it announces");
}

void check_pack(std::span<const unsigned char> idx, std::span<const unsigned char> pack_bytes) {
    auto pack = SourcePack::borrow(idx, pack_bytes);
    if (!pack) return;
    const std::uint32_t count = pack->index().count();
    for (std::uint32_t pos = 0; pos < count; ++pos) {
        const git_oid id = oid_from_raw(pack->index().name(pos));
        if (const auto found = pack->find(id)) {
            require(*found < count, "find answers a position inside the index");
            require(std::memcmp(pack->index().name(*found), id.id, GIT_OID_RAWSZ) == 0,
                    "find answers a position holding the id");
        }
        const auto entry = pack->entry(pos);
        if (entry) {
            require(entry->offset < entry->data && entry->data < entry->end &&
                        entry->end <= pack_bytes.size() - GIT_OID_RAWSZ,
                    "an entry lies inside the pack, before its checksum");
            if (entry->type == kPackOfsDelta) {
                require(entry->base < entry->offset, "an offset delta's base lies before it");
                (void)pack->id_at_offset(entry->base);
            } else {
                require(entry->type == kPackRefDelta || (entry->type >= 1 && entry->type <= 4),
                        "an entry has a known type");
            }
        }
        const auto object = pack->read(pos);
        if (object) {
            require(object->type >= 1 && object->type <= 4 && object->bytes != nullptr,
                    "an object read is a whole commit, tree, blob or tag");
            if (entry && entry->type != kPackOfsDelta && entry->type != kPackRefDelta)
                require(object->bytes->size() == entry->size,
                        "a whole object has the size its header gives");
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    if (size < 5) return 0;
    std::uint32_t first_length = 0;
    for (int i = 0; i < 4; ++i) first_length |= std::uint32_t{data[1 + i]} << (8 * i);
    const std::size_t rest = size - 5;
    const std::size_t split = std::min<std::size_t>(first_length, rest);
    const std::vector<unsigned char> first(data + 5, data + 5 + split);
    const std::vector<unsigned char> second(data + 5 + split, data + size);
    if ((data[0] & 1) == 0)
        check_pack(first, second);
    else
        check_delta(first, second);
    return 0;
}

#ifdef TEA_FUZZ_REPLAY_MAIN
#include "support/fuzz_replay_main.hpp"
#endif
