#include "git/private_repository.hpp"

#include <fcntl.h>
#include <git2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "git/git_directory.hpp"
#include "git/libgit2.hpp"

namespace tea::git {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kEmptyTreeId = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
constexpr std::string_view kEmptyBlobId = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
// Bumped whenever the layout of a built repository changes, so an old cache entry is not reused.
constexpr std::string_view kCacheFormat = "tea-private-repository 1";

// ---------------------------------------------------------------------------------------------
// libgit2 plumbing

using Repository = GitPtr<git_repository, git_repository_free>;
using Odb = GitPtr<git_odb, git_odb_free>;
using OdbObject = GitPtr<git_odb_object, git_odb_object_free>;
using Object = GitPtr<git_object, git_object_free>;
using Tree = GitPtr<git_tree, git_tree_free>;
using Commit = GitPtr<git_commit, git_commit_free>;
using Index = GitPtr<git_index, git_index_free>;
using Config = GitPtr<git_config, git_config_free>;
using Reference = GitPtr<git_reference, git_reference_free>;
using RefIterator = GitPtr<git_reference_iterator, git_reference_iterator_free>;

struct OidHash {
    std::size_t operator()(const git_oid &oid) const noexcept {
        std::size_t h = 0;
        std::memcpy(&h, oid.id, sizeof h);
        return h;
    }
};
struct OidEqual {
    bool operator()(const git_oid &a, const git_oid &b) const noexcept {
        return git_oid_equal(&a, &b) != 0;
    }
};
using OidSet = std::unordered_set<git_oid, OidHash, OidEqual>;

std::string hex(const git_oid &oid) {
    std::array<char, GIT_OID_HEXSZ + 1> buffer{};
    git_oid_tostr(buffer.data(), buffer.size(), &oid);
    return buffer.data();
}

std::optional<git_oid> parse_oid(std::string_view text) {
    if (text.size() != GIT_OID_HEXSZ) return std::nullopt;
    git_oid oid;
    if (git_oid_fromstrn(&oid, text.data(), text.size()) != 0) return std::nullopt;
    return oid;
}

git_oid oid_from_raw(const unsigned char *raw) {
    git_oid oid;
    git_oid_fromraw(&oid, raw);
    return oid;
}

// ---------------------------------------------------------------------------------------------
// Files

class Fd {
   public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    Fd(Fd &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd &operator=(Fd &&other) noexcept {
        std::swap(fd_, other.fd_);
        return *this;
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const { return fd_; }

   private:
    int fd_;
};

// A read-only memory map of a whole file; pack and index files are read in place.
class MappedFile {
   public:
    static std::optional<MappedFile> open(const fs::path &path) {
        // Never through a link: a pack planted as one would be another repository's.
        Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
        if (fd.get() < 0) return std::nullopt;
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
            return std::nullopt;
        const auto size = static_cast<std::size_t>(st.st_size);
        void *data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
        if (data == MAP_FAILED) return std::nullopt;
        return MappedFile(static_cast<const unsigned char *>(data), size);
    }
    MappedFile(MappedFile &&other) noexcept
        : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
    MappedFile &operator=(MappedFile &&) = delete;
    MappedFile(const MappedFile &) = delete;
    MappedFile &operator=(const MappedFile &) = delete;
    ~MappedFile() {
        if (data_ != nullptr) ::munmap(const_cast<unsigned char *>(data_), size_);
    }
    const unsigned char *data() const { return data_; }
    std::size_t size() const { return size_; }

   private:
    MappedFile(const unsigned char *data, std::size_t size) : data_(data), size_(size) {}
    const unsigned char *data_;
    std::size_t size_;
};

void write_file(const fs::path &path, std::string_view content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::optional<std::string> read_file(const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream content;
    content << in.rdbuf();
    return content.str();
}

void fsync_path(const fs::path &path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() >= 0) ::fsync(fd.get());
}

// A directory that is removed on scope exit unless released; the build happens in one, so a
// failure at any step leaves nothing behind.
class TempDirectory {
   public:
    explicit TempDirectory(const fs::path &sibling_of) {
        std::random_device random;
        const fs::path parent =
            sibling_of.parent_path().empty() ? fs::path(".") : sibling_of.parent_path();
        for (int attempt = 0; attempt < 16; ++attempt) {
            std::ostringstream name;
            name << '.' << sibling_of.filename().string() << ".tmp-" << std::hex << random();
            fs::path candidate = parent / name.str();
            if (::mkdir(candidate.c_str(), 0755) == 0) {
                path_ = std::move(candidate);
                return;
            }
            if (errno != EEXIST) break;
        }
        throw std::system_error(
            errno, std::generic_category(),
            "cannot create a temporary directory beside " + sibling_of.string());
    }
    TempDirectory(const TempDirectory &) = delete;
    TempDirectory &operator=(const TempDirectory &) = delete;
    ~TempDirectory() {
        if (!path_.empty()) {
            std::error_code ignored;
            fs::remove_all(path_, ignored);
        }
    }
    const fs::path &path() const { return path_; }
    // Moves the directory to target, which must not exist; afterwards nothing is removed.
    void commit_to(const fs::path &target) {
        // RENAME_NOREPLACE: a plain rename would silently replace an empty directory created at
        // the destination since the check.
        if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) != 0) {
            throw std::system_error(errno, std::generic_category(),
                                    "cannot move the built repository to " + target.string());
        }
        fsync_path(target.parent_path().empty() ? fs::path(".") : target.parent_path());
        path_.clear();
    }

   private:
    fs::path path_;
};

// ---------------------------------------------------------------------------------------------
// SHA-1, for the pack trailer the indexer checks. Integrity only, not a security boundary: the
// object ids themselves are computed by libgit2's indexer.

class Sha1 {
   public:
    void update(const unsigned char *data, std::size_t size) {
        length_ += size;
        while (size > 0) {
            const std::size_t take = std::min(size, block_.size() - used_);
            std::memcpy(block_.data() + used_, data, take);
            used_ += take;
            data += take;
            size -= take;
            if (used_ == block_.size()) {
                compress(block_.data());
                used_ = 0;
            }
        }
    }
    std::array<unsigned char, 20> finish() {
        const std::uint64_t bits = length_ * 8;
        const unsigned char pad = 0x80;
        update(&pad, 1);
        const unsigned char zero = 0;
        while (used_ != 56) update(&zero, 1);
        std::array<unsigned char, 8> length_bytes{};
        for (int i = 0; i < 8; ++i)
            length_bytes[static_cast<std::size_t>(i)] =
                static_cast<unsigned char>(bits >> (56 - 8 * i));
        update(length_bytes.data(), length_bytes.size());
        std::array<unsigned char, 20> digest{};
        for (std::size_t i = 0; i < 5; ++i)
            for (std::size_t j = 0; j < 4; ++j)
                digest[i * 4 + j] = static_cast<unsigned char>(state_[i] >> (24 - 8 * j));
        return digest;
    }

   private:
    static std::uint32_t rol(std::uint32_t v, int n) { return (v << n) | (v >> (32 - n)); }
    void compress(const unsigned char *p) {
        std::array<std::uint32_t, 80> w{};
        for (std::size_t i = 0; i < 16; ++i)
            w[i] = (std::uint32_t{p[4 * i]} << 24) | (std::uint32_t{p[4 * i + 1]} << 16) |
                   (std::uint32_t{p[4 * i + 2]} << 8) | std::uint32_t{p[4 * i + 3]};
        for (std::size_t i = 16; i < 80; ++i)
            w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3], e = state_[4];
        for (std::size_t i = 0; i < 80; ++i) {
            std::uint32_t f = 0;
            std::uint32_t k = 0;
            if (i < 20) {
                f = (b & c) | (~b & d);
                k = 0x5A827999;
            } else if (i < 40) {
                f = b ^ c ^ d;
                k = 0x6ED9EBA1;
            } else if (i < 60) {
                f = (b & c) | (b & d) | (c & d);
                k = 0x8F1BBCDC;
            } else {
                f = b ^ c ^ d;
                k = 0xCA62C1D6;
            }
            const std::uint32_t t = rol(a, 5) + f + e + k + w[i];
            e = d;
            d = c;
            c = rol(b, 30);
            b = a;
            a = t;
        }
        state_[0] += a;
        state_[1] += b;
        state_[2] += c;
        state_[3] += d;
        state_[4] += e;
    }
    std::array<std::uint32_t, 5> state_{0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    std::array<unsigned char, 64> block_{};
    std::size_t used_ = 0;
    std::uint64_t length_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The project's packs, read in place so that objects can be copied without inflating them.

constexpr int kPackOfsDelta = 6;
constexpr int kPackRefDelta = 7;

std::uint32_t be32(const unsigned char *p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
           std::uint32_t{p[3]};
}

struct PackEntry {
    int type = 0;              // 1..4 for whole objects, 6/7 for deltas
    std::uint64_t size = 0;    // inflated size (of the delta, for deltas)
    std::uint64_t offset = 0;  // of the entry header
    std::uint64_t data = 0;    // of the compressed data
    std::uint64_t end = 0;     // one past the compressed data
    std::uint64_t base = 0;    // OFS_DELTA: offset of the base entry
    git_oid base_id{};         // REF_DELTA: the base's id
};

using Bytes = std::vector<unsigned char>;

struct PackObject {
    int type = 0;  // 1 commit, 2 tree, 3 blob, 4 tag
    std::shared_ptr<const Bytes> bytes;
};

// Recently read objects by pack offset. Consecutive versions of a tree are stored as deltas on
// one another, so keeping what was just read saves inflating the same chain again and again.
class BaseCache {
   public:
    std::optional<PackObject> find(std::uint64_t offset) const {
        const auto it = objects_.find(offset);
        if (it == objects_.end()) return std::nullopt;
        return it->second;
    }
    void store(std::uint64_t offset, const PackObject &object) {
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

   private:
    static constexpr std::size_t kLimit = std::size_t{64} << 20;
    std::unordered_map<std::uint64_t, PackObject> objects_;
    std::deque<std::pair<std::uint64_t, std::size_t>> order_;
    std::size_t bytes_ = 0;
};

std::optional<Bytes> inflate_exact(const unsigned char *data, std::size_t size,
                                   std::uint64_t expected) {
    if (expected > (std::uint64_t{1} << 32)) return std::nullopt;
    Bytes out(static_cast<std::size_t>(expected));
    z_stream stream{};
    if (inflateInit(&stream) != Z_OK) return std::nullopt;
    stream.next_in = const_cast<Bytef *>(data);
    stream.avail_in = static_cast<uInt>(std::min<std::size_t>(size, 0xffffffffU));
    // One spare byte, so that a stream longer than the header says is caught.
    unsigned char spare = 0;
    stream.next_out = out.empty() ? &spare : out.data();
    stream.avail_out = out.empty() ? 1 : static_cast<uInt>(out.size());
    const int rc = inflate(&stream, Z_FINISH);
    const bool ok = rc == Z_STREAM_END && stream.total_out == expected;
    inflateEnd(&stream);
    if (!ok) return std::nullopt;
    return out;
}

std::optional<std::uint64_t> delta_varint(const Bytes &delta, std::size_t &at) {
    std::uint64_t value = 0;
    int shift = 0;
    unsigned char c = 0;
    do {
        if (at >= delta.size() || shift > 57) return std::nullopt;
        c = delta[at++];
        value |= std::uint64_t{c & 0x7fU} << shift;
        shift += 7;
    } while ((c & 0x80) != 0);
    return value;
}

// Git's delta format: the base and result sizes, then copy-from-base and insert instructions.
std::optional<Bytes> apply_delta(const Bytes &base, const Bytes &delta) {
    std::size_t at = 0;
    const auto base_size = delta_varint(delta, at);
    const auto result_size = delta_varint(delta, at);
    if (!base_size || !result_size || *base_size != base.size() ||
        *result_size > (std::uint64_t{1} << 32))
        return std::nullopt;
    Bytes out;
    out.reserve(static_cast<std::size_t>(*result_size));
    while (at < delta.size()) {
        const unsigned char op = delta[at++];
        if ((op & 0x80) != 0) {
            std::size_t copy_offset = 0, copy_size = 0;
            for (unsigned bit = 0; bit < 4; ++bit)
                if ((op & (1U << bit)) != 0) {
                    if (at >= delta.size()) return std::nullopt;
                    copy_offset |= std::size_t{delta[at++]} << (8 * bit);
                }
            for (unsigned bit = 0; bit < 3; ++bit)
                if ((op & (0x10U << bit)) != 0) {
                    if (at >= delta.size()) return std::nullopt;
                    copy_size |= std::size_t{delta[at++]} << (8 * bit);
                }
            if (copy_size == 0) copy_size = 0x10000;
            if (copy_offset > base.size() || copy_size > base.size() - copy_offset)
                return std::nullopt;
            const auto from = base.begin() + static_cast<std::ptrdiff_t>(copy_offset);
            out.insert(out.end(), from, from + static_cast<std::ptrdiff_t>(copy_size));
        } else if (op != 0) {
            if (op > delta.size() - at) return std::nullopt;
            const auto from = delta.begin() + static_cast<std::ptrdiff_t>(at);
            out.insert(out.end(), from, from + op);
            at += op;
        } else {
            return std::nullopt;
        }
        if (out.size() > *result_size) return std::nullopt;
    }
    if (out.size() != *result_size) return std::nullopt;
    return out;
}

class SourcePack {
   public:
    static std::optional<SourcePack> open(const fs::path &idx_path) {
        auto idx = MappedFile::open(idx_path);
        fs::path pack_path = idx_path;
        pack_path.replace_extension(".pack");
        auto pack = MappedFile::open(pack_path);
        if (!idx || !pack) return std::nullopt;
        // Only version 2 indexes are read in place; anything else is read through libgit2.
        static constexpr unsigned char kMagic[] = {0xff, 't', 'O', 'c', 0, 0, 0, 2};
        if (idx->size() < 8 + 1024 + 40 || std::memcmp(idx->data(), kMagic, 8) != 0)
            return std::nullopt;
        if (pack->size() < 32 || std::memcmp(pack->data(), "PACK", 4) != 0) return std::nullopt;
        SourcePack source(std::move(*idx), std::move(*pack));
        if (!source.layout_is_valid()) return std::nullopt;
        return source;
    }

    std::optional<std::uint32_t> find(const git_oid &oid) const {
        const unsigned char first = oid.id[0];
        std::uint32_t lo = first == 0 ? 0 : fanout(first - 1);
        std::uint32_t hi = fanout(first);
        while (lo < hi) {
            const std::uint32_t mid = lo + (hi - lo) / 2;
            const int cmp = std::memcmp(name(mid), oid.id, GIT_OID_RAWSZ);
            if (cmp == 0) return mid;
            if (cmp < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        return std::nullopt;
    }

    // Parses the entry at index position pos and checks it against the CRC the index records, as
    // git does before copying an entry unchanged; nullopt when it does not match (the object is
    // then read through libgit2, which reports the damage).
    std::optional<PackEntry> entry(std::uint32_t pos) {
        auto e = parse_entry(offset(pos));
        if (!e) return std::nullopt;
        const unsigned char *p = pack_.data();
        if (e->end - e->offset > 0xffffffffU ||
            crc32(0, p + e->offset, static_cast<uInt>(e->end - e->offset)) !=
                be32(crc_table() + 4 * std::size_t{pos}))
            return std::nullopt;
        return e;
    }

    // The object stored at index position pos, deltas resolved; nullopt when it cannot be read
    // from this pack alone.
    std::optional<PackObject> read(std::uint32_t pos) { return read_at(offset(pos), 0); }

    // The id of the entry that starts at offset (an OFS_DELTA's base).
    std::optional<git_oid> id_at_offset(std::uint64_t at) {
        build_offset_order();
        const auto it =
            std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(at, std::uint32_t{0}));
        if (it == sorted_.end() || it->first != at) return std::nullopt;
        return oid_from_raw(name(it->second));
    }

    const unsigned char *pack_data() const { return pack_.data(); }
    std::size_t size() const { return count(); }

   private:
    SourcePack(MappedFile idx, MappedFile pack) : idx_(std::move(idx)), pack_(std::move(pack)) {}

    std::optional<PackEntry> parse_entry(std::uint64_t at_offset) {
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

    std::optional<PackObject> read_at(std::uint64_t at, int depth) {
        if (auto cached = cache_.find(at)) return cached;
        // Git never writes chains this deep; a longer one means a damaged or hostile pack.
        if (depth > 4096) return std::nullopt;
        const auto e = parse_entry(at);
        if (!e) return std::nullopt;
        const unsigned char *compressed = pack_.data() + e->data;
        const std::size_t compressed_size = e->end - e->data;
        PackObject result;
        if (e->type != kPackOfsDelta && e->type != kPackRefDelta) {
            auto bytes = inflate_exact(compressed, compressed_size, e->size);
            if (!bytes) return std::nullopt;
            result = PackObject{e->type, std::make_shared<const Bytes>(std::move(*bytes))};
        } else {
            std::optional<std::uint64_t> base_offset;
            if (e->type == kPackOfsDelta) {
                base_offset = e->base;
            } else if (auto pos = find(e->base_id)) {
                base_offset = offset(*pos);
            }
            if (!base_offset) return std::nullopt;
            const auto base = read_at(*base_offset, depth + 1);
            if (!base) return std::nullopt;
            const auto delta = inflate_exact(compressed, compressed_size, e->size);
            if (!delta) return std::nullopt;
            auto bytes = apply_delta(*base->bytes, *delta);
            if (!bytes) return std::nullopt;
            result = PackObject{base->type, std::make_shared<const Bytes>(std::move(*bytes))};
        }
        cache_.store(at, result);
        return result;
    }

    std::uint32_t fanout(unsigned index) const {
        return be32(idx_.data() + 8 + std::size_t{4} * index);
    }
    std::uint32_t count() const { return fanout(255); }
    const unsigned char *name(std::uint32_t pos) const {
        return idx_.data() + 8 + 1024 + std::size_t{pos} * GIT_OID_RAWSZ;
    }
    const unsigned char *crc_table() const {
        return idx_.data() + 8 + 1024 + std::size_t{count()} * GIT_OID_RAWSZ;
    }
    const unsigned char *offset_table() const { return crc_table() + std::size_t{count()} * 4; }
    const unsigned char *large_offset_table() const {
        return offset_table() + std::size_t{count()} * 4;
    }
    std::uint64_t offset(std::uint32_t pos) const {
        const std::uint32_t small = be32(offset_table() + 4 * std::size_t{pos});
        if ((small & 0x80000000U) == 0) return small;
        const std::size_t large = small & 0x7fffffffU;
        const unsigned char *p = large_offset_table() + 8 * large;
        if (p + 8 > idx_.data() + idx_.size() - 40) return 0;
        return (std::uint64_t{be32(p)} << 32) | be32(p + 4);
    }
    bool layout_is_valid() const {
        const std::size_t n = count();
        const std::size_t minimum = 8 + 1024 + n * (GIT_OID_RAWSZ + 8) + 40;
        return idx_.size() >= minimum && be32(pack_.data() + 8) == n;
    }
    void build_offset_order() {
        if (!sorted_.empty() || count() == 0) return;
        sorted_.reserve(count());
        for (std::uint32_t pos = 0; pos < count(); ++pos) sorted_.emplace_back(offset(pos), pos);
        std::sort(sorted_.begin(), sorted_.end());
    }

    MappedFile idx_;
    MappedFile pack_;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> sorted_;
    BaseCache cache_;
};

class SourcePacks {
   public:
    explicit SourcePacks(const fs::path &objects_dir) {
        std::error_code ec;
        std::vector<fs::path> indexes;
        for (const auto &item : fs::directory_iterator(objects_dir / "pack", ec))
            if (item.path().extension() == ".idx") indexes.push_back(item.path());
        std::sort(indexes.begin(), indexes.end());
        for (const auto &idx : indexes)
            if (auto pack = SourcePack::open(idx)) packs_.push_back(std::move(*pack));
    }
    struct Location {
        std::size_t pack;
        std::uint32_t pos;
    };
    std::optional<Location> find(const git_oid &oid) const {
        for (std::size_t i = 0; i < packs_.size(); ++i)
            if (auto pos = packs_[i].find(oid)) return Location{i, *pos};
        return std::nullopt;
    }
    SourcePack &pack(std::size_t i) { return packs_[i]; }
    std::size_t object_count() const {
        std::size_t n = 0;
        for (const auto &pack : packs_) n += pack.size();
        return n;
    }
    std::optional<PackObject> read(const git_oid &oid) {
        const auto location = find(oid);
        if (!location) return std::nullopt;
        return packs_[location->pack].read(location->pos);
    }

   private:
    std::vector<SourcePack> packs_;
};

// ---------------------------------------------------------------------------------------------
// The pack of the private repository and its index, written directly. Every object's id is known
// before it is written (it is what the history walk looked up), so the index is built from the ids,
// offsets and CRCs gathered while writing, and no object has to be inflated again to hash it.
// Entries copied from the project's packs were checked against the project's CRCs; the
// tests run `git verify-pack` over the result.

void write_all(int fd, const unsigned char *data, std::size_t size, const fs::path &path) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw std::system_error(errno, std::generic_category(),
                                    "cannot write " + path.string());
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

void put32(Bytes &out, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
        out.push_back(static_cast<unsigned char>(v >> shift));
}

class PackWriter {
   public:
    PackWriter(fs::path pack_dir, std::uint32_t object_count)
        : dir_(std::move(pack_dir)), temp_(dir_ / "tmp_pack"), expected_(object_count) {
        fd_ = Fd(::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
        if (fd_.get() < 0)
            throw std::system_error(errno, std::generic_category(),
                                    "cannot create " + temp_.string());
        entries_.reserve(object_count);
        unsigned char header[12] = {'P', 'A', 'C', 'K', 0, 0, 0, 2};
        for (int i = 0; i < 4; ++i)
            header[8 + i] = static_cast<unsigned char>(object_count >> (24 - 8 * i));
        append(header, sizeof header);
    }

    // Starts the entry of object id; the bytes appended until the next entry are its entry.
    void begin_entry(const git_oid &id) {
        end_entry();
        entries_.push_back(Entry{id, written_, 0});
        crc_ = crc32(0, nullptr, 0);
        in_entry_ = true;
    }

    void append(const unsigned char *data, std::size_t size) {
        sha_.update(data, size);
        if (in_entry_) crc_ = crc32_z(crc_, data, size);
        written_ += size;
        if (buffer_.size() + size > kBufferSize) flush();
        if (size >= kBufferSize) {
            write_all(fd_.get(), data, size, temp_);
            return;
        }
        buffer_.insert(buffer_.end(), data, data + size);
    }

    void append_header(int type, std::uint64_t size) {
        std::array<unsigned char, 16> header{};
        std::size_t n = 0;
        unsigned char c = static_cast<unsigned char>((type << 4) | static_cast<int>(size & 15U));
        size >>= 4;
        while (size != 0) {
            header[n++] = c | 0x80;
            c = static_cast<unsigned char>(size & 0x7fU);
            size >>= 7;
        }
        header[n++] = c;
        append(header.data(), n);
    }

    void append_whole_object(git_object_t type, const void *data, std::size_t size) {
        append_header(static_cast<int>(type), size);
        uLongf bound = compressBound(static_cast<uLong>(size));
        Bytes compressed(bound);
        if (compress2(compressed.data(), &bound, static_cast<const Bytef *>(data),
                      static_cast<uLong>(size), Z_DEFAULT_COMPRESSION) != Z_OK)
            throw std::runtime_error("cannot compress an object for the pack");
        append(compressed.data(), bound);
    }

    // Writes the trailer and the index, and gives both their final names.
    void finish() {
        end_entry();
        if (entries_.size() != expected_)
            throw std::logic_error("the pack holds a different number of objects than announced");
        const auto digest = sha_.finish();
        in_entry_ = false;
        buffer_.insert(buffer_.end(), digest.begin(), digest.end());
        flush();
        if (::fsync(fd_.get()) != 0)
            throw std::system_error(errno, std::generic_category(),
                                    "cannot sync " + temp_.string());
        fd_ = Fd();

        std::array<char, GIT_OID_HEXSZ + 1> name{};
        git_oid pack_id = oid_from_raw(digest.data());
        git_oid_tostr(name.data(), name.size(), &pack_id);
        const fs::path base = dir_ / ("pack-" + std::string(name.data()));
        const Bytes index = build_index(digest);
        const fs::path temp_index = dir_ / "tmp_idx";
        {
            Fd out(::open(temp_index.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
            if (out.get() < 0)
                throw std::system_error(errno, std::generic_category(),
                                        "cannot create " + temp_index.string());
            write_all(out.get(), index.data(), index.size(), temp_index);
            if (::fsync(out.get()) != 0)
                throw std::system_error(errno, std::generic_category(), "cannot sync the index");
        }
        // The pack is named before its index, as git does: an index never names a missing pack.
        fs::rename(temp_, fs::path(base).replace_extension(".pack"));
        fs::rename(temp_index, fs::path(base).replace_extension(".idx"));
    }

   private:
    struct Entry {
        git_oid id;
        std::uint64_t offset;
        std::uint32_t crc;
    };
    static constexpr std::size_t kBufferSize = std::size_t{1} << 20;

    void end_entry() {
        if (in_entry_ && !entries_.empty()) entries_.back().crc = static_cast<std::uint32_t>(crc_);
        in_entry_ = false;
    }
    void flush() {
        if (buffer_.empty()) return;
        write_all(fd_.get(), buffer_.data(), buffer_.size(), temp_);
        buffer_.clear();
    }

    // Index format version 2: fan-out table, sorted ids, CRCs, offsets (large ones in a second
    // table), the pack's checksum and the index's own.
    Bytes build_index(const std::array<unsigned char, 20> &pack_digest) {
        std::sort(entries_.begin(), entries_.end(),
                  [](const Entry &a, const Entry &b) { return git_oid_cmp(&a.id, &b.id) < 0; });
        for (std::size_t i = 1; i < entries_.size(); ++i)
            if (git_oid_equal(&entries_[i - 1].id, &entries_[i].id))
                throw std::logic_error("object " + hex(entries_[i].id) + " was written twice");
        Bytes out;
        out.reserve(8 + 1024 + entries_.size() * 28 + 40);
        static constexpr unsigned char kIndexHeader[] = {0xff, 't', 'O', 'c', 0, 0, 0, 2};
        out.insert(out.end(), std::begin(kIndexHeader), std::end(kIndexHeader));
        std::size_t at = 0;
        for (unsigned first = 0; first < 256; ++first) {
            while (at < entries_.size() && entries_[at].id.id[0] == first) ++at;
            put32(out, static_cast<std::uint32_t>(at));
        }
        for (const auto &e : entries_) out.insert(out.end(), e.id.id, e.id.id + GIT_OID_RAWSZ);
        for (const auto &e : entries_) put32(out, e.crc);
        std::vector<std::uint64_t> large;
        for (const auto &e : entries_) {
            if (e.offset < 0x80000000U) {
                put32(out, static_cast<std::uint32_t>(e.offset));
            } else {
                put32(out, 0x80000000U | static_cast<std::uint32_t>(large.size()));
                large.push_back(e.offset);
            }
        }
        for (const auto offset : large) {
            put32(out, static_cast<std::uint32_t>(offset >> 32));
            put32(out, static_cast<std::uint32_t>(offset));
        }
        out.insert(out.end(), pack_digest.begin(), pack_digest.end());
        Sha1 sha;
        sha.update(out.data(), out.size());
        const auto digest = sha.finish();
        out.insert(out.end(), digest.begin(), digest.end());
        return out;
    }

    fs::path dir_;
    fs::path temp_;
    std::size_t expected_;
    Fd fd_;
    Sha1 sha_;
    Bytes buffer_;
    std::uint64_t written_ = 0;
    uLong crc_ = 0;
    bool in_entry_ = false;
    std::vector<Entry> entries_;
};

// ---------------------------------------------------------------------------------------------
// Withheld paths as a trie of path components.

struct PathNode {
    bool withheld = false;
    std::map<std::string, PathNode, std::less<>> children;
    OidSet visited;  // trees already walked at this position
};

std::vector<std::string> normalize_withheld(const std::vector<std::string> &paths) {
    std::vector<std::string> result;
    for (const auto &path : paths) {
        std::vector<std::string> parts;
        std::string part;
        std::istringstream in(path);
        while (std::getline(in, part, '/'))
            if (!part.empty()) parts.push_back(part);
        if (parts.empty() || path.front() == '/')
            throw std::invalid_argument("withheld path \"" + path +
                                        "\" is not a repository-relative folder");
        std::string joined;
        for (const auto &p : parts) {
            if (p == "." || p == ".." || p.find('\0') != std::string::npos)
                throw std::invalid_argument("withheld path \"" + path +
                                            "\" must not contain \".\" or \"..\"");
            joined += (joined.empty() ? "" : "/") + p;
        }
        result.push_back(joined);
    }
    std::sort(result.begin(), result.end());
    result.erase(std::unique(result.begin(), result.end()), result.end());
    return result;
}

PathNode build_trie(const std::vector<std::string> &paths) {
    PathNode root;
    for (const auto &path : paths) {
        PathNode *node = &root;
        std::istringstream in(path);
        std::string part;
        while (std::getline(in, part, '/')) node = &node->children[part];
        node->withheld = true;
    }
    return root;
}

// ---------------------------------------------------------------------------------------------
// Walking the history

struct TreeEntryView {
    std::string_view mode;
    std::string_view name;
    git_oid id;
};

// Calls visit for every entry of a raw tree object; false when the tree is malformed.
template <typename Visit>
bool for_each_tree_entry(const unsigned char *data, std::size_t size, Visit &&visit) {
    const char *p = reinterpret_cast<const char *>(data);
    const char *end = p + size;
    while (p < end) {
        const char *space =
            static_cast<const char *>(std::memchr(p, ' ', static_cast<std::size_t>(end - p)));
        if (space == nullptr) return false;
        const char *nul = static_cast<const char *>(
            std::memchr(space + 1, '\0', static_cast<std::size_t>(end - space - 1)));
        if (nul == nullptr || end - nul - 1 < GIT_OID_RAWSZ) return false;
        TreeEntryView entry{std::string_view(p, static_cast<std::size_t>(space - p)),
                            std::string_view(space + 1, static_cast<std::size_t>(nul - space - 1)),
                            oid_from_raw(reinterpret_cast<const unsigned char *>(nul + 1))};
        visit(entry);
        p = nul + 1 + GIT_OID_RAWSZ;
    }
    return true;
}

enum class EntryKind { Directory, File, Submodule };
EntryKind kind_of(std::string_view mode) {
    if (mode == "40000" || mode == "040000") return EntryKind::Directory;
    if (mode == "160000") return EntryKind::Submodule;
    return EntryKind::File;
}

// Header lines of a commit or tag object, up to the blank line before the message.
// An object read either in place from one of the project's packs or, failing that, by libgit2
// (loose objects, alternates, packs this file does not read).
struct LoadedObject {
    git_object_t type = GIT_OBJECT_INVALID;
    std::shared_ptr<const Bytes> bytes;
    OdbObject odb;
    const unsigned char *data() const {
        return bytes ? bytes->data()
                     : static_cast<const unsigned char *>(git_odb_object_data(odb.get()));
    }
    std::size_t size() const { return bytes ? bytes->size() : git_odb_object_size(odb.get()); }
};

template <typename Visit>
void for_each_header(const LoadedObject &object, Visit &&visit) {
    std::string_view text(reinterpret_cast<const char *>(object.data()), object.size());
    while (!text.empty()) {
        const std::size_t eol = text.find('\n');
        const std::string_view line = text.substr(0, eol);
        if (line.empty()) return;
        const std::size_t space = line.find(' ');
        if (space != std::string_view::npos) visit(line.substr(0, space), line.substr(space + 1));
        if (eol == std::string_view::npos) return;
        text.remove_prefix(eol + 1);
    }
}

struct TagRef {
    std::string name;
    git_oid target;  // what the ref names (a tag object or the object itself)
    std::optional<git_oid> peeled;
};

class HistoryCollector {
   public:
    HistoryCollector(git_odb *odb, SourcePacks &packs, PathNode &withheld)
        : odb_(odb), packs_(packs), withheld_(withheld) {
        included_.reserve(packs.object_count());
    }

    void collect(const git_oid &tip) {
        std::vector<git_oid> pending{tip};
        OidSet seen{tip};
        while (!pending.empty()) {
            const git_oid id = pending.back();
            pending.pop_back();
            const auto commit = read(id, GIT_OBJECT_COMMIT);
            if (!commit) continue;
            include(id, commits_);
            for_each_header(*commit, [&](std::string_view key, std::string_view value) {
                if (key == "tree") {
                    if (auto tree = parse_oid(value)) walk_withheld_prefix(*tree, withheld_);
                } else if (key == "parent") {
                    if (auto parent = parse_oid(value); parent && seen.insert(*parent).second)
                        pending.push_back(*parent);
                }
            });
        }
    }

    // Keeps a tag ref when what it finally names was carried, with every tag object on the way.
    bool carry_tag(TagRef &tag) {
        std::vector<git_oid> chain;
        git_oid current = tag.target;
        for (int depth = 0; depth < 16; ++depth) {
            if (included_.count(current) != 0) {
                for (const auto &t : chain) include(t, tags_);
                if (!chain.empty()) tag.peeled = current;
                return true;
            }
            const auto object = load(current);
            if (!object || object->type != GIT_OBJECT_TAG) return false;
            std::optional<git_oid> next;
            for_each_header(*object, [&](std::string_view key, std::string_view value) {
                if (key == "object" && !next) next = parse_oid(value);
            });
            if (!next) return false;
            chain.push_back(current);
            current = *next;
        }
        return false;
    }

    const std::vector<git_oid> &commits() const { return commits_; }
    const std::vector<git_oid> &trees() const { return trees_; }
    const std::vector<git_oid> &blobs() const { return blobs_; }
    const std::vector<git_oid> &tags() const { return tags_; }
    const OidSet &included() const { return included_; }
    const std::vector<git_oid> &missing() const { return missing_; }
    // Withheld entries by id, with the type their replacement must have.
    const std::map<std::string, git_object_t> &replaced() const { return replaced_; }

   private:
    void include(const git_oid &id, std::vector<git_oid> &list) {
        if (included_.insert(id).second) list.push_back(id);
    }

    void note_missing(const git_oid &id) {
        if (missing_seen_.insert(id).second) missing_.push_back(id);
    }

    bool exists(const git_oid &id) { return packs_.find(id) || git_odb_exists(odb_, &id) != 0; }

    // nullopt when the project does not hold the object.
    std::optional<LoadedObject> load(const git_oid &id) {
        LoadedObject object;
        if (auto packed = packs_.read(id)) {
            object.type = static_cast<git_object_t>(packed->type);
            object.bytes = std::move(packed->bytes);
            return object;
        }
        git_odb_object *raw = nullptr;
        const int rc = git_odb_read(&raw, odb_, &id);
        if (rc == GIT_ENOTFOUND) return std::nullopt;
        if (rc != 0)
            throw std::runtime_error("cannot read object " + hex(id) + ": " + last_git_error());
        object.odb.reset(raw);
        object.type = git_odb_object_type(raw);
        return object;
    }

    std::optional<LoadedObject> read(const git_oid &id, git_object_t expected) {
        auto object = load(id);
        if (!object) {
            note_missing(id);
            return std::nullopt;
        }
        if (object->type != expected)
            throw std::runtime_error("object " + hex(id) + " is not a " +
                                     git_object_type2string(expected));
        return object;
    }

    void add_blob(const git_oid &id) {
        // One hash lookup for the common case, a blob already carried.
        const auto [it, inserted] = included_.insert(id);
        if (!inserted) return;
        if (exists(id)) {
            blobs_.push_back(id);
            return;
        }
        included_.erase(it);
        note_missing(id);
    }

    // A tree at a position where every entry, at any depth, is carried.
    void walk_tree(const git_oid &root) {
        if (included_.count(root) != 0) return;
        std::vector<git_oid> pending{root};
        while (!pending.empty()) {
            const git_oid id = pending.back();
            pending.pop_back();
            if (included_.count(id) != 0) continue;
            const auto tree = read(id, GIT_OBJECT_TREE);
            if (!tree) continue;
            include(id, trees_);
            parse_tree(*tree, id, [&](const TreeEntryView &entry) {
                switch (kind_of(entry.mode)) {
                    case EntryKind::Directory:
                        if (included_.count(entry.id) == 0) pending.push_back(entry.id);
                        break;
                    case EntryKind::File:
                        add_blob(entry.id);
                        break;
                    case EntryKind::Submodule:
                        break;  // a submodule's commit is not stored here
                }
            });
        }
    }

    // A tree on the way to a withheld path (the root tree, or "a" for "a/b"): its withheld entry is
    // left out and named for a replace ref, every other entry is carried.
    void walk_withheld_prefix(const git_oid &id, PathNode &node) {
        if (!node.visited.insert(id).second) return;
        const auto tree = read(id, GIT_OBJECT_TREE);
        if (!tree) return;
        include(id, trees_);
        parse_tree(*tree, id, [&](const TreeEntryView &entry) {
            const EntryKind kind = kind_of(entry.mode);
            const auto child = node.children.find(entry.name);
            if (child != node.children.end() && kind != EntryKind::Submodule) {
                if (child->second.withheld) {
                    replaced_.emplace(hex(entry.id), kind == EntryKind::Directory
                                                         ? GIT_OBJECT_TREE
                                                         : GIT_OBJECT_BLOB);
                    return;
                }
                if (kind == EntryKind::Directory) {
                    walk_withheld_prefix(entry.id, child->second);
                    return;
                }
            }
            switch (kind) {
                case EntryKind::Directory:
                    walk_tree(entry.id);
                    break;
                case EntryKind::File:
                    add_blob(entry.id);
                    break;
                case EntryKind::Submodule:
                    break;
            }
        });
    }

    template <typename Visit>
    void parse_tree(const LoadedObject &tree, const git_oid &id, Visit &&visit) {
        if (!for_each_tree_entry(tree.data(), tree.size(), visit))
            throw std::runtime_error("tree " + hex(id) + " is malformed");
    }

    git_odb *odb_;
    SourcePacks &packs_;
    PathNode &withheld_;
    OidSet included_;
    OidSet missing_seen_;
    std::vector<git_oid> commits_, trees_, blobs_, tags_, missing_;
    std::map<std::string, git_object_t> replaced_;
};

// ---------------------------------------------------------------------------------------------
// Writing the private repository

class PackAssembler {
   public:
    PackAssembler(git_odb *odb, SourcePacks &packs, const OidSet &included)
        : odb_(odb), packs_(packs), included_(included) {}

    void write(PackWriter &writer, const git_oid &id) {
        writer.begin_entry(id);
        if (auto location = packs_.find(id)) {
            SourcePack &pack = packs_.pack(location->pack);
            if (auto entry = pack.entry(location->pos)) {
                if (copy_entry(writer, pack, location->pack, *entry)) return;
            }
        }
        git_odb_object *raw = nullptr;
        if (git_odb_read(&raw, odb_, &id) != 0)
            throw std::runtime_error("cannot read object " + hex(id) + ": " + last_git_error());
        OdbObject object(raw);
        writer.append_whole_object(git_odb_object_type(raw), git_odb_object_data(raw),
                                   git_odb_object_size(raw));
    }

   private:
    // Copies a pack entry without inflating it. A delta is kept only when its base is carried too
    // and lives in the same source pack (deltas within one pack never form a cycle); a delta on a
    // withheld base is written whole instead, so the private pack needs nothing it lacks.
    bool copy_entry(PackWriter &writer, SourcePack &pack, std::size_t pack_index,
                    const PackEntry &entry) {
        const unsigned char *p = pack.pack_data();
        if (entry.type != kPackOfsDelta && entry.type != kPackRefDelta) {
            writer.append(p + entry.offset, entry.end - entry.offset);
            return true;
        }
        std::optional<git_oid> base =
            entry.type == kPackRefDelta ? entry.base_id : pack.id_at_offset(entry.base);
        if (!base || included_.count(*base) == 0) return false;
        const auto base_location = packs_.find(*base);
        if (!base_location || base_location->pack != pack_index) return false;
        writer.append_header(kPackRefDelta, entry.size);
        writer.append(base->id, GIT_OID_RAWSZ);
        writer.append(p + entry.data, entry.end - entry.data);
        return true;
    }

    git_odb *odb_;
    SourcePacks &packs_;
    const OidSet &included_;
};

struct OpenedProject {
    Repository repository;
    fs::path common_dir;
    git_oid commit{};
    std::string commit_hex;
    std::vector<TagRef> tags;
};

[[noreturn]] void fail(const PrivateRepositoryRequest &request, const std::string &commit,
                       const std::string &reason) {
    throw PrivateRepositoryError("cannot build the private repository of " +
                                 request.project_repository.string() + " at commit " + commit +
                                 ": " + reason);
}

OpenedProject open_project(const PrivateRepositoryRequest &request) {
    OpenedProject project;
    try {
        // A work tree's .git is taken by the rules that keep a planted one from naming another
        // repository; a git directory named directly is the caller's.
        std::error_code ec;
        const auto path = fs::canonical(request.project_repository, ec);
        if (ec) throw GitDirectoryError(request.project_repository.string() + ": " + ec.message());
        const auto own = work_tree_git_directory(path);
        const GitDirectory directory = own ? *own : git_directory_at(path);
        project.repository = open_self_contained(directory);
        project.common_dir = directory.common_dir;
    } catch (const GitDirectoryError &e) {
        fail(request, request.commit,
             std::string{"it is not a repository the runtime reads ("} + e.what() + ")");
    }
    git_repository *raw = project.repository.get();

    git_object *object = nullptr;
    if (request.commit.empty() || request.commit.front() == '-' ||
        git_revparse_single(&object, raw, request.commit.c_str()) != 0)
        fail(request, request.commit,
             "the commit does not exist in the repository (" + last_git_error() + ")");
    Object resolved(object);
    git_object *peeled = nullptr;
    if (git_object_peel(&peeled, resolved.get(), GIT_OBJECT_COMMIT) != 0)
        fail(request, request.commit, "it does not name a commit (" + last_git_error() + ")");
    Object commit(peeled);
    project.commit = *git_object_id(commit.get());
    project.commit_hex = hex(project.commit);

    git_reference_iterator *iterator = nullptr;
    if (git_reference_iterator_glob_new(&iterator, raw, "refs/tags/*") != 0)
        fail(request, project.commit_hex, "cannot list its tags (" + last_git_error() + ")");
    RefIterator refs(iterator);
    git_reference *ref = nullptr;
    while (git_reference_next(&ref, refs.get()) == 0) {
        Reference owned(ref);
        git_reference *resolved_ref = nullptr;
        if (git_reference_resolve(&resolved_ref, owned.get()) != 0) continue;
        Reference direct(resolved_ref);
        if (const git_oid *target = git_reference_target(direct.get()))
            project.tags.push_back(TagRef{git_reference_name(owned.get()), *target, std::nullopt});
    }
    std::sort(project.tags.begin(), project.tags.end(),
              [](const TagRef &a, const TagRef &b) { return a.name < b.name; });
    return project;
}

std::string packed_refs(const std::vector<TagRef> &tags,
                        const std::map<std::string, git_object_t> &replaced) {
    // Replace refs and tags in one sorted packed-refs file: one file to write, and git reads it
    // once instead of a loose file per ref.
    std::map<std::string, std::pair<std::string, std::string>> refs;
    for (const auto &[id, type] : replaced)
        refs["refs/replace/" + id] = {
            std::string(type == GIT_OBJECT_TREE ? kEmptyTreeId : kEmptyBlobId), ""};
    for (const auto &tag : tags)
        refs[tag.name] = {hex(tag.target), tag.peeled ? hex(*tag.peeled) : ""};
    std::string out = "# pack-refs with: peeled fully-peeled sorted \n";
    for (const auto &[name, target] : refs) {
        out += target.first + ' ' + name + '\n';
        if (!target.second.empty()) out += '^' + target.second + '\n';
    }
    return out;
}

void write_repository_skeleton(const fs::path &root, const std::string &commit_hex) {
    for (const char *dir : {"objects/pack", "objects/info", "refs/heads", "refs/tags", "info"})
        fs::create_directories(root / dir);
    // Detached HEAD: the target's checkout is on no branch, as in a run without confinement.
    write_file(root / "HEAD", commit_hex + "\n");
    // Deliberately no [remote] and no extensions.partialClone: without a promisor remote no git
    // version fetches a missing object, so a confined run never reaches the network through git.
    write_file(root / "config",
               "[core]\n"
               "\trepositoryformatversion = 0\n"
               "\tfilemode = true\n"
               "\tbare = true\n"
               "\tlogallrefupdates = false\n"
               "[gc]\n"
               "\tauto = 0\n");
    write_file(root / "description", "private repository of an evaluated commit\n");
}

void copy_shallow(const fs::path &common_dir, const fs::path &root, const OidSet &included) {
    const auto shallow = read_file(common_dir / "shallow");
    if (!shallow) return;
    std::string out;
    std::istringstream in(*shallow);
    std::string line;
    while (std::getline(in, line))
        if (auto id = parse_oid(line); id && included.count(*id) != 0) out += line + '\n';
    if (!out.empty()) write_file(root / "shallow", out);
}

PrivateRepositoryResult build_into(const PrivateRepositoryRequest &request, OpenedProject &project,
                                   const std::vector<std::string> &withheld, const fs::path &root) {
    git_odb *raw_odb = nullptr;
    if (git_repository_odb(&raw_odb, project.repository.get()) != 0)
        fail(request, project.commit_hex, "cannot open its object database");
    Odb odb(raw_odb);

    if (git_odb_exists(odb.get(), &project.commit) == 0)
        fail(request, project.commit_hex, "the commit's object is not on disk");

    SourcePacks packs(project.common_dir / "objects");
    PathNode trie = build_trie(withheld);
    HistoryCollector history(odb.get(), packs, trie);
    history.collect(project.commit);
    if (history.included().count(project.commit) == 0)
        fail(request, project.commit_hex, "the commit's object cannot be read");

    PrivateRepositoryResult result;
    result.commit_id = project.commit_hex;
    std::vector<TagRef> carried;
    for (auto &tag : project.tags)
        if (history.carry_tag(tag)) carried.push_back(tag);

    // The replacements must exist as objects: git refuses a replace ref to a missing object.
    bool needs_empty_tree = false, needs_empty_blob = false;
    for (const auto &[id, type] : history.replaced())
        (type == GIT_OBJECT_TREE ? needs_empty_tree : needs_empty_blob) = true;
    const git_oid empty_tree = *parse_oid(kEmptyTreeId);
    const git_oid empty_blob = *parse_oid(kEmptyBlobId);

    const auto &inc = history.included();
    const bool write_empty_tree = needs_empty_tree && inc.count(empty_tree) == 0;
    const bool write_empty_blob = needs_empty_blob && inc.count(empty_blob) == 0;
    const std::size_t total = history.commits().size() + history.tags().size() +
                              history.trees().size() + history.blobs().size() +
                              (write_empty_tree ? 1 : 0) + (write_empty_blob ? 1 : 0);
    if (total > 0xffffffffU) fail(request, project.commit_hex, "the history is too large");

    write_repository_skeleton(root, project.commit_hex);
    {
        PackWriter writer(root / "objects" / "pack", static_cast<std::uint32_t>(total));
        PackAssembler assembler(odb.get(), packs, inc);
        for (const auto *list :
             {&history.commits(), &history.tags(), &history.trees(), &history.blobs()})
            for (const auto &id : *list) assembler.write(writer, id);
        if (write_empty_tree) {
            writer.begin_entry(empty_tree);
            writer.append_whole_object(GIT_OBJECT_TREE, "", 0);
        }
        if (write_empty_blob) {
            writer.begin_entry(empty_blob);
            writer.append_whole_object(GIT_OBJECT_BLOB, "", 0);
        }
        writer.finish();
    }
    write_file(root / "packed-refs", packed_refs(carried, history.replaced()));
    copy_shallow(project.common_dir, root, inc);

    result.commits = history.commits().size();
    result.trees = history.trees().size();
    result.blobs = history.blobs().size();
    result.tags = carried.size();
    for (const auto &id : history.missing()) result.missing_objects.push_back(hex(id));
    return result;
}

// ---------------------------------------------------------------------------------------------
// Cache

std::string cache_key(const OpenedProject &project, const std::vector<std::string> &withheld) {
    std::string material(kCacheFormat);
    material += "\nrepository " + project.common_dir.string() + "\ncommit " + project.commit_hex;
    for (const auto &path : withheld) material += "\nwithheld " + path;
    for (const auto &tag : project.tags) material += "\ntag " + tag.name + ' ' + hex(tag.target);
    git_oid key;
    git_odb_hash(&key, material.data(), material.size(), GIT_OBJECT_BLOB);
    return hex(key);
}

std::string serialize(const PrivateRepositoryResult &r) {
    std::ostringstream out;
    out << kCacheFormat << '\n'
        << r.commit_id << '\n'
        << r.commits << ' ' << r.trees << ' ' << r.blobs << ' ' << r.tags << '\n';
    for (const auto &id : r.missing_objects) out << id << '\n';
    return out.str();
}

std::optional<PrivateRepositoryResult> deserialize(const std::string &text) {
    std::istringstream in(text);
    std::string line;
    if (!std::getline(in, line) || line != kCacheFormat) return std::nullopt;
    PrivateRepositoryResult r;
    if (!std::getline(in, r.commit_id) || !std::getline(in, line)) return std::nullopt;
    std::istringstream counts(line);
    if (!(counts >> r.commits >> r.trees >> r.blobs >> r.tags)) return std::nullopt;
    while (std::getline(in, line))
        if (!line.empty()) r.missing_objects.push_back(line);
    return r;
}

// Copies a built repository; pack files, which nobody ever writes in place, are hard-linked when
// the file system allows, everything else is copied so that configuring one copy (attach_worktree)
// cannot change another.
void copy_repository(const fs::path &from, const fs::path &to) {
    fs::create_directory(to);
    for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator();
         ++it) {
        const fs::path target = to / fs::relative(it->path(), from);
        if (it->is_directory()) {
            fs::create_directory(target);
            continue;
        }
        const bool pack_file = it->path().parent_path().filename() == "pack";
        std::error_code ec;
        if (pack_file) fs::create_hard_link(it->path(), target, ec);
        if (!pack_file || ec) fs::copy_file(it->path(), target);
    }
}

bool still_missing(const OpenedProject &project, const PrivateRepositoryResult &cached) {
    if (cached.missing_objects.empty()) return true;
    git_odb *raw = nullptr;
    if (git_repository_odb(&raw, project.repository.get()) != 0) return false;
    Odb odb(raw);
    for (const auto &text : cached.missing_objects) {
        const auto id = parse_oid(text);
        if (!id || git_odb_exists(odb.get(), &*id) != 0) return false;
    }
    return true;
}

// Copies a cached repository to destination; nullopt when the entry is unusable (damaged, or the
// project has since obtained an object that was missing when the entry was built).
std::optional<PrivateRepositoryResult> reuse_cached(const fs::path &entry,
                                                    const OpenedProject &project,
                                                    const fs::path &destination) {
    const auto text = read_file(entry / "result");
    if (!text) return std::nullopt;
    auto cached = deserialize(*text);
    if (!cached || cached->commit_id != project.commit_hex || !still_missing(project, *cached) ||
        !fs::is_directory(entry / "repository"))
        return std::nullopt;
    TempDirectory temp(destination);
    copy_repository(entry / "repository", temp.path());
    temp.commit_to(destination);
    cached->reused_from_cache = true;
    return cached;
}

void store_in_cache(const fs::path &cache_directory, const std::string &key, const fs::path &built,
                    const PrivateRepositoryResult &result) {
    fs::create_directories(cache_directory);
    const fs::path entry = cache_directory / key;
    TempDirectory temp(entry);
    copy_repository(built, temp.path() / "repository");
    write_file(temp.path() / "result", serialize(result));
    std::error_code ec;
    fs::remove_all(entry, ec);  // an entry that could not be used (damaged or stale)
    try {
        temp.commit_to(entry);
    } catch (const std::system_error &) {
        // Another run stored the same entry first; either copy serves.
    }
}

// ---------------------------------------------------------------------------------------------
// Checkout

Config open_config(const fs::path &path) {
    git_config *raw = nullptr;
    if (git_config_open_ondisk(&raw, path.c_str()) != 0)
        throw std::runtime_error("cannot open " + path.string() + ": " + last_git_error());
    return Config(raw);
}

// The ids the private repository replaces: the withheld folders (and, by the id limit, any
// identical tree elsewhere), which git shows as empty and the checkout therefore leaves out.
OidSet replaced_ids(git_repository *repository) {
    OidSet ids;
    git_reference_iterator *raw = nullptr;
    if (git_reference_iterator_glob_new(&raw, repository, "refs/replace/*") != 0)
        throw std::runtime_error("cannot list replace refs: " + last_git_error());
    RefIterator refs(raw);
    const char *name = nullptr;
    while (git_reference_next_name(&name, refs.get()) == 0) {
        const std::string_view prefix = "refs/replace/";
        if (auto id = parse_oid(std::string_view(name).substr(prefix.size()))) ids.insert(*id);
    }
    return ids;
}

struct IndexBuilder {
    git_index *index;
    const OidSet &replaced;
    std::string error;
};

int add_to_index(const char *root, const git_tree_entry *entry, void *payload) {
    auto &builder = *static_cast<IndexBuilder *>(payload);
    // libgit2 does not read replace refs, so a replaced tree is skipped before it would be
    // opened (it is absent) and a replaced blob is left out like the folder it stands for.
    if (builder.replaced.count(*git_tree_entry_id(entry)) != 0) return 1;
    if (git_tree_entry_type(entry) == GIT_OBJECT_TREE) return 0;
    const std::string path = std::string(root) + git_tree_entry_name(entry);
    git_index_entry item{};
    item.mode = static_cast<std::uint32_t>(git_tree_entry_filemode_raw(entry));
    item.id = *git_tree_entry_id(entry);
    item.path = path.c_str();
    if (git_index_add(builder.index, &item) != 0) {
        builder.error = "cannot add " + path + " to the index: " + last_git_error();
        return -1;
    }
    return 0;
}

// Writes the repository's index of HEAD's files except the withheld folders; with write_files,
// writes those files into the work tree too.
void index_head(const fs::path &repository_dir, const fs::path &checkout, bool write_files) {
    git_repository *raw = nullptr;
    if (git_repository_open_bare(&raw, repository_dir.c_str()) != 0)
        throw std::runtime_error("cannot open it: " + last_git_error());
    Repository repository(raw);
    // In memory only; the configuration is changed once the checkout has succeeded.
    if (git_repository_set_workdir(raw, checkout.c_str(), 0) != 0)
        throw std::runtime_error("cannot use the checkout as its work tree: " + last_git_error());
    git_oid head;
    if (git_reference_name_to_id(&head, raw, "HEAD") != 0)
        throw std::runtime_error("its HEAD names no commit: " + last_git_error());
    git_commit *commit_raw = nullptr;
    if (git_commit_lookup(&commit_raw, raw, &head) != 0)
        throw std::runtime_error("cannot read commit " + hex(head) + ": " + last_git_error());
    Commit commit(commit_raw);
    git_tree *tree_raw = nullptr;
    if (git_commit_tree(&tree_raw, commit.get()) != 0)
        throw std::runtime_error("cannot read the tree of " + hex(head) + ": " + last_git_error());
    Tree tree(tree_raw);

    git_index *index_raw = nullptr;
    if (git_repository_index(&index_raw, raw) != 0)
        throw std::runtime_error("cannot open its index: " + last_git_error());
    Index index(index_raw);
    if (git_index_clear(index.get()) != 0)
        throw std::runtime_error("cannot clear its index: " + last_git_error());
    const OidSet replaced = replaced_ids(raw);
    IndexBuilder builder{index.get(), replaced, {}};
    if (git_tree_walk(tree.get(), GIT_TREEWALK_PRE, add_to_index, &builder) != 0)
        throw std::runtime_error(builder.error.empty() ? "cannot read the tree of " + hex(head) +
                                                             ": " + last_git_error()
                                                       : builder.error);

    git_checkout_options options = GIT_CHECKOUT_OPTIONS_INIT;
    options.checkout_strategy = GIT_CHECKOUT_FORCE;
    if (write_files && git_checkout_index(raw, index.get(), &options) != 0)
        throw std::runtime_error("cannot check out commit " + hex(head) + ": " + last_git_error());
    if (git_index_write(index.get()) != 0)
        throw std::runtime_error("cannot write the index: " + last_git_error());
}

void configure_work_tree(const fs::path &repository, const fs::path &work_tree) {
    Config config = open_config(repository / "config");
    if (git_config_set_bool(config.get(), "core.bare", 0) != 0 ||
        git_config_set_string(config.get(), "core.worktree", work_tree.c_str()) != 0)
        throw std::runtime_error("cannot configure the work tree: " + last_git_error());
}

}  // namespace

PrivateRepositoryResult build_private_repository(const PrivateRepositoryRequest &request,
                                                 const std::filesystem::path &cache_directory) {
    ensure_libgit2();
    std::error_code ec;
    if (request.destination.empty()) fail(request, request.commit, "no destination was given");
    if (fs::symlink_status(request.destination, ec).type() != fs::file_type::not_found)
        fail(request, request.commit,
             "the destination " + request.destination.string() + " already exists");
    std::vector<std::string> withheld;
    try {
        withheld = normalize_withheld(request.withheld_paths);
    } catch (const std::invalid_argument &error) {
        fail(request, request.commit, error.what());
    }

    OpenedProject project = open_project(request);
    const fs::path destination = fs::absolute(request.destination);
    try {
        std::string key;
        if (!cache_directory.empty()) {
            key = cache_key(project, withheld);
            if (auto cached = reuse_cached(cache_directory / key, project, destination))
                return *cached;
        }
        TempDirectory temp(destination);
        PrivateRepositoryResult result = build_into(request, project, withheld, temp.path());
        if (!key.empty()) store_in_cache(cache_directory, key, temp.path(), result);
        temp.commit_to(destination);
        return result;
    } catch (const PrivateRepositoryError &) {
        throw;
    } catch (const std::exception &error) {
        fail(request, project.commit_hex, error.what());
    }
}

void attach_worktree(const std::filesystem::path &checkout_dir,
                     const std::filesystem::path &private_repository) {
    ensure_libgit2();
    const fs::path checkout = fs::absolute(checkout_dir).lexically_normal();
    const auto refuse = [&](const std::string &reason) {
        throw PrivateRepositoryError("cannot attach the checkout " + checkout.string() +
                                     " to the private repository " + private_repository.string() +
                                     ": " + reason);
    };
    std::error_code ec;
    const fs::path repository = fs::canonical(private_repository, ec);
    if (ec) refuse("the repository does not exist");

    bool created = false;
    const auto status = fs::symlink_status(checkout, ec);
    if (status.type() == fs::file_type::not_found) {
        if (!fs::create_directories(checkout, ec) || ec) refuse("cannot create the checkout");
        created = true;
    } else if (status.type() != fs::file_type::directory || !fs::is_empty(checkout, ec)) {
        // Files already there would either be overwritten or make `git status` lie.
        refuse("the checkout exists and is not an empty directory");
    }
    try {
        index_head(repository, checkout, true);
        // Attached last, so a failed checkout leaves the private repository as it was.
        configure_work_tree(repository, checkout);
        write_file(checkout / ".git", "gitdir: " + repository.string() + "\n");
    } catch (const std::exception &error) {
        if (created) {
            fs::remove_all(checkout, ec);
        } else {
            for (const auto &item : fs::directory_iterator(checkout, ec))
                fs::remove_all(item.path(), ec);
        }
        fs::remove(repository / "index", ec);
        refuse(error.what());
    }
}

void attach_in_place(const std::filesystem::path &work_tree,
                     const std::filesystem::path &private_repository) {
    ensure_libgit2();
    std::error_code ec;
    const fs::path tree = fs::canonical(work_tree, ec);
    const fs::path repository = fs::canonical(private_repository, ec);
    const auto refuse = [&](const std::string &reason) {
        throw PrivateRepositoryError("cannot attach the work tree " + work_tree.string() +
                                     " to the private repository " + private_repository.string() +
                                     ": " + reason);
    };
    if (tree.empty() || !fs::is_directory(tree, ec)) refuse("the work tree is not a directory");
    if (repository.empty()) refuse("the repository does not exist");
    try {
        index_head(repository, tree, false);
        configure_work_tree(repository, tree);
    } catch (const std::exception &error) {
        fs::remove(repository / "index", ec);
        refuse(error.what());
    }
}

}  // namespace tea::git
