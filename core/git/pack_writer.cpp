#include "git/pack_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include "git/object_id.hpp"

namespace tea::git {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

PackWriter::PackWriter(fs::path pack_dir, std::uint32_t object_count)
    : dir_(std::move(pack_dir)), temp_(dir_ / "tmp_pack"), expected_(object_count) {
    fd_ = UniqueFd(::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
    if (!fd_)
        throw std::system_error(errno, std::generic_category(), "cannot create " + temp_.string());
    entries_.reserve(object_count);
    unsigned char header[12] = {'P', 'A', 'C', 'K', 0, 0, 0, 2};
    for (int i = 0; i < 4; ++i)
        header[8 + i] = static_cast<unsigned char>(object_count >> (24 - 8 * i));
    append(header, sizeof header);
}

void PackWriter::begin_entry(const git_oid &id) {
    end_entry();
    entries_.push_back(PackIndexEntry{id, written_, 0});
    crc_ = crc32(0, nullptr, 0);
    in_entry_ = true;
}

void PackWriter::append(const unsigned char *data, std::size_t size) {
    checksum_.update(data, size);
    if (in_entry_) crc_ = crc32_z(crc_, data, size);
    written_ += size;
    if (buffer_.size() + size > kBufferSize) flush();
    if (size >= kBufferSize) {
        write_all(fd_.get(), data, size, temp_);
        return;
    }
    buffer_.insert(buffer_.end(), data, data + size);
}

void PackWriter::append_header(int type, std::uint64_t size) {
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

void PackWriter::append_whole_object(git_object_t type, const void *data, std::size_t size) {
    append_header(static_cast<int>(type), size);
    uLongf bound = compressBound(static_cast<uLong>(size));
    std::vector<unsigned char> compressed(bound);
    if (compress2(compressed.data(), &bound, static_cast<const Bytef *>(data),
                  static_cast<uLong>(size), Z_DEFAULT_COMPRESSION) != Z_OK)
        throw std::runtime_error("cannot compress an object for the pack");
    append(compressed.data(), bound);
}

void PackWriter::finish() {
    end_entry();
    if (entries_.size() != expected_)
        throw std::logic_error("the pack holds a different number of objects than announced");
    const auto digest = checksum_.finish();
    in_entry_ = false;
    buffer_.insert(buffer_.end(), digest.begin(), digest.end());
    flush();
    if (::fsync(fd_.get()) != 0)
        throw std::system_error(errno, std::generic_category(), "cannot sync " + temp_.string());
    fd_.reset();

    const git_oid pack_id = oid_from_raw(digest.data());
    const fs::path base = dir_ / ("pack-" + hex(pack_id));
    const auto index = build_pack_index(std::move(entries_), digest);
    entries_.clear();
    const fs::path temp_index = dir_ / "tmp_idx";
    {
        const UniqueFd out(
            ::open(temp_index.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
        if (!out)
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

void PackWriter::end_entry() {
    if (in_entry_ && !entries_.empty()) entries_.back().crc = static_cast<std::uint32_t>(crc_);
    in_entry_ = false;
}

void PackWriter::flush() {
    if (buffer_.empty()) return;
    write_all(fd_.get(), buffer_.data(), buffer_.size(), temp_);
    buffer_.clear();
}

}  // namespace tea::git
