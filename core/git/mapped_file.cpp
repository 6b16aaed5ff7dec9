#include "git/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <utility>

#include "util/fd.hpp"

namespace tea::git {

std::optional<MappedFile> MappedFile::open(const std::filesystem::path &path) {
    // Never through a link: a pack planted as one would be another repository's.
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return std::nullopt;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return std::nullopt;
    const auto size = static_cast<std::size_t>(st.st_size);
    void *data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (data == MAP_FAILED) return std::nullopt;
    return MappedFile(static_cast<const unsigned char *>(data), size);
}

MappedFile::MappedFile(MappedFile &&other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile::~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<unsigned char *>(data_), size_);
}

}  // namespace tea::git
