// A read-only memory map of a whole regular file: the project's pack and index files are read in
// place, never copied into memory.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>

namespace tea::git {

class MappedFile {
   public:
    // nullopt when path is not a non-empty regular file that can be opened and mapped, or is a
    // symbolic link.
    static std::optional<MappedFile> open(const std::filesystem::path &path);

    MappedFile(MappedFile &&other) noexcept;
    MappedFile &operator=(MappedFile &&) = delete;
    MappedFile(const MappedFile &) = delete;
    MappedFile &operator=(const MappedFile &) = delete;
    ~MappedFile();

    // Stays valid when the MappedFile is moved: the mapping moves with it.
    std::span<const unsigned char> bytes() const { return {data_, size_}; }

   private:
    MappedFile(const unsigned char *data, std::size_t size) : data_(data), size_(size) {}
    const unsigned char *data_;
    std::size_t size_;
};

}  // namespace tea::git
