// A fresh directory for one test, under $TMPDIR (or /tmp), removed with the object even when the
// test took write or search permission away from parts of it. C++17, for the SDK's tests too.
#ifndef TEA_TEST_SUPPORT_TEMP_DIR_HPP
#define TEA_TEST_SUPPORT_TEMP_DIR_HPP

#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>

namespace tea::test {

class TempDir {
   public:
    // <tmp>/<prefix>-XXXXXX with the given mode (0755 lets another user of a test through).
    explicit TempDir(const std::string &prefix = "tea-test",
                     std::filesystem::perms mode = std::filesystem::perms::owner_all) {
        std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX"));
        if (::mkdtemp(pattern.data()) == nullptr) {
            throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
        }
        path_ = pattern;
        std::filesystem::permissions(path_, mode);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    TempDir(TempDir &&) = delete;
    TempDir &operator=(TempDir &&) = delete;
    ~TempDir() {
        std::error_code ec;
        std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::add, ec);
        for (std::filesystem::recursive_directory_iterator it{path_, ec}, end; !ec && it != end;
             it.increment(ec)) {
            if (it->is_directory(ec) && !it->is_symlink(ec)) {
                std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                             std::filesystem::perm_options::add, ec);
            }
        }
        std::filesystem::remove_all(path_, ec);
    }

    [[nodiscard]] const std::filesystem::path &path() const { return path_; }
    [[nodiscard]] std::filesystem::path operator/(const std::string &name) const {
        return path_ / name;
    }

   private:
    std::filesystem::path path_;
};

}  // namespace tea::test

#endif  // TEA_TEST_SUPPORT_TEMP_DIR_HPP
