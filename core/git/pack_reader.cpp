#include "git/pack_reader.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <system_error>

#include "git/byte_order.hpp"
#include "git/object_id.hpp"

namespace tea::git {
namespace {

// Deflate's greatest expansion: a 258-byte match in two bits.
constexpr std::uint64_t kMostInflatedPerByte = 1032;
constexpr std::size_t kFirstBuffer = std::size_t{1} << 20;

}  // namespace

std::optional<Bytes> inflate_exact(const unsigned char *data, std::size_t size,
                                   std::uint64_t expected) {
    // The size comes from the project's entry header. Deflate makes at most 1032 bytes of each
    // byte it reads, so a claim beyond that is refused before any memory is taken for it.
    if (expected > (std::uint64_t{1} << 32) || expected / kMostInflatedPerByte > size)
        return std::nullopt;
    // Memory follows what the stream makes, not what the header claims: a buffer of at most
    // kFirstBuffer, doubled as it fills. One spare byte catches a stream longer than claimed.
    const auto limit = static_cast<std::size_t>(expected) + 1;
    Bytes out(std::min(limit, kFirstBuffer));
    z_stream stream{};
    if (inflateInit(&stream) != Z_OK) return std::nullopt;
    stream.next_in = const_cast<Bytef *>(data);
    stream.avail_in = static_cast<uInt>(std::min<std::size_t>(size, 0xffffffffU));
    int rc = Z_OK;
    for (;;) {
        stream.next_out = out.data() + stream.total_out;
        stream.avail_out = static_cast<uInt>(out.size() - stream.total_out);
        rc = inflate(&stream, Z_NO_FLUSH);
        // Ended, damaged, or out of input before the buffer filled.
        if (rc != Z_OK || stream.total_out < out.size() || out.size() == limit) break;
        out.resize(std::min(limit, out.size() * 2));
    }
    const bool ok = rc == Z_STREAM_END && stream.total_out == expected;
    inflateEnd(&stream);
    if (!ok) return std::nullopt;
    out.resize(static_cast<std::size_t>(expected));
    return out;
}

std::optional<SourcePack> SourcePack::open(const std::filesystem::path &idx_path) {
    auto idx = MappedFile::open(idx_path);
    std::filesystem::path pack_path = idx_path;
    pack_path.replace_extension(".pack");
    auto pack = MappedFile::open(pack_path);
    if (!idx || !pack) return std::nullopt;
    auto source = borrow(idx->bytes(), pack->bytes());
    if (!source) return std::nullopt;
    return SourcePack(std::move(idx), std::move(pack), source->index_, source->pack_);
}

std::optional<SourcePack> SourcePack::borrow(std::span<const unsigned char> idx,
                                             std::span<const unsigned char> pack) {
    // Only version 2 indexes are read in place; anything else is read through libgit2.
    const auto index = PackIndex::parse(idx);
    if (!index) return std::nullopt;
    if (pack.size() < 32 || std::memcmp(pack.data(), "PACK", 4) != 0 ||
        be32(pack.data() + 8) != index->count())
        return std::nullopt;
    return SourcePack(std::nullopt, std::nullopt, *index, pack);
}

std::optional<PackEntry> SourcePack::entry(std::uint32_t pos) {
    auto e = parse_entry(index_.offset(pos));
    if (!e) return std::nullopt;
    if (e->end - e->offset > 0xffffffffU ||
        crc32(0, pack_.data() + e->offset, static_cast<uInt>(e->end - e->offset)) !=
            index_.crc(pos))
        return std::nullopt;
    return e;
}

std::optional<git_oid> SourcePack::id_at_offset(std::uint64_t at) {
    build_offset_order();
    const auto it =
        std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(at, std::uint32_t{0}));
    if (it == sorted_.end() || it->first != at) return std::nullopt;
    return oid_from_raw(index_.name(it->second));
}

std::optional<PackEntry> SourcePack::parse_entry(std::uint64_t at_offset) {
    build_offset_order();
    PackEntry e;
    e.offset = at_offset;
    const auto by_offset = std::lower_bound(sorted_.begin(), sorted_.end(),
                                            std::make_pair(e.offset, std::uint32_t{0}));
    if (by_offset == sorted_.end() || by_offset->first != e.offset) return std::nullopt;
    e.end = std::next(by_offset) == sorted_.end() ? pack_.size() - GIT_OID_RAWSZ
                                                  : std::next(by_offset)->first;
    if (e.end <= e.offset || e.end > pack_.size() - GIT_OID_RAWSZ) return std::nullopt;
    const unsigned char *p = pack_.data();
    std::uint64_t at = e.offset;
    unsigned char c = p[at++];
    e.type = (c >> 4) & 7;
    e.size = c & 15U;
    int shift = 4;
    while ((c & 0x80) != 0) {
        if (at >= e.end || shift > 57) return std::nullopt;
        c = p[at++];
        e.size |= std::uint64_t{c & 0x7fU} << shift;
        shift += 7;
    }
    if (e.type == kPackOfsDelta) {
        if (at >= e.end) return std::nullopt;
        c = p[at++];
        std::uint64_t distance = c & 0x7fU;
        while ((c & 0x80) != 0) {
            if (at >= e.end || distance > (std::uint64_t{1} << 56)) return std::nullopt;
            c = p[at++];
            distance = ((distance + 1) << 7) | (c & 0x7fU);
        }
        if (distance == 0 || distance > e.offset) return std::nullopt;
        e.base = e.offset - distance;
    } else if (e.type == kPackRefDelta) {
        if (at + GIT_OID_RAWSZ > e.end) return std::nullopt;
        e.base_id = oid_from_raw(p + at);
        at += GIT_OID_RAWSZ;
    } else if (e.type < 1 || e.type > 4) {
        return std::nullopt;
    }
    e.data = at;
    if (e.data >= e.end) return std::nullopt;
    return e;
}

std::optional<PackObject> SourcePack::read_at(std::uint64_t at) {
    // The chain of deltas from `at` down to an object stored whole (or one already read), walked
    // in a loop: a hostile pack's chain of thousands of deltas must not exhaust the stack.
    std::vector<std::pair<std::uint64_t, PackEntry>> deltas;  // `at` first
    std::optional<PackObject> object;
    for (std::uint64_t next = at; !object;) {
        if (auto cached = cache_.find(next)) {
            object = std::move(cached);
            break;
        }
        // Git never writes chains this deep; a longer one means a damaged or hostile pack.
        if (deltas.size() > 4096) return std::nullopt;
        const auto e = parse_entry(next);
        if (!e) return std::nullopt;
        if (e->type != kPackOfsDelta && e->type != kPackRefDelta) {
            auto bytes = inflate_exact(pack_.data() + e->data, e->end - e->data, e->size);
            if (!bytes) return std::nullopt;
            object = PackObject{e->type, std::make_shared<const Bytes>(std::move(*bytes))};
            cache_.store(next, *object);
            break;
        }
        std::optional<std::uint64_t> base_offset;
        if (e->type == kPackOfsDelta) {
            base_offset = e->base;
        } else if (auto pos = find(e->base_id)) {
            base_offset = index_.offset(*pos);
        }
        if (!base_offset) return std::nullopt;
        deltas.emplace_back(next, *e);
        next = *base_offset;
    }
    // Each delta applied to the object beneath it, from the deepest up to `at`.
    for (auto it = deltas.rbegin(); it != deltas.rend(); ++it) {
        const PackEntry &e = it->second;
        const auto delta = inflate_exact(pack_.data() + e.data, e.end - e.data, e.size);
        if (!delta) return std::nullopt;
        auto bytes = apply_delta(*object->bytes, *delta);
        if (!bytes) return std::nullopt;
        object = PackObject{object->type, std::make_shared<const Bytes>(std::move(*bytes))};
        cache_.store(it->first, *object);
    }
    return object;
}

void SourcePack::build_offset_order() {
    if (!sorted_.empty() || index_.count() == 0) return;
    sorted_.reserve(index_.count());
    for (std::uint32_t pos = 0; pos < index_.count(); ++pos)
        sorted_.emplace_back(index_.offset(pos), pos);
    std::sort(sorted_.begin(), sorted_.end());
}

SourcePacks::SourcePacks(const std::filesystem::path &objects_dir) {
    std::error_code ec;
    std::vector<std::filesystem::path> indexes;
    for (const auto &item : std::filesystem::directory_iterator(objects_dir / "pack", ec))
        if (item.path().extension() == ".idx") indexes.push_back(item.path());
    std::sort(indexes.begin(), indexes.end());
    for (const auto &idx : indexes)
        if (auto pack = SourcePack::open(idx)) packs_.push_back(std::move(*pack));
}

std::optional<SourcePacks::Location> SourcePacks::find(const git_oid &oid) const {
    for (std::size_t i = 0; i < packs_.size(); ++i)
        if (auto pos = packs_[i].find(oid)) return Location{i, *pos};
    return std::nullopt;
}

std::size_t SourcePacks::object_count() const {
    std::size_t n = 0;
    for (const auto &pack : packs_) n += pack.size();
    return n;
}

std::optional<PackObject> SourcePacks::read(const git_oid &oid) {
    const auto location = find(oid);
    if (!location) return std::nullopt;
    return packs_[location->pack].read(location->pos);
}

}  // namespace tea::git
