// The file work of building a repository: whole files written and read, and a directory built
// beside its destination and renamed into place, so a failure at any step leaves nothing behind.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace tea::git {

// Throws std::runtime_error naming path when it cannot be written whole.
void write_file(const std::filesystem::path &path, std::string_view content);
std::optional<std::string> read_file(const std::filesystem::path &path);

// A directory that is removed on scope exit unless committed.
class TempDirectory {
   public:
    // A new, uniquely named hidden sibling of sibling_of; throws std::system_error.
    explicit TempDirectory(const std::filesystem::path &sibling_of);
    TempDirectory(const TempDirectory &) = delete;
    TempDirectory &operator=(const TempDirectory &) = delete;
    ~TempDirectory();

    const std::filesystem::path &path() const { return path_; }
    // Moves the directory to target, which must not exist; afterwards nothing is removed.
    void commit_to(const std::filesystem::path &target);

   private:
    std::filesystem::path path_;
};

}  // namespace tea::git
