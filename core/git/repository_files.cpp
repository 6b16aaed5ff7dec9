#include "git/repository_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "util/fd.hpp"

namespace tea::git {
namespace {

namespace fs = std::filesystem;

void fsync_path(const fs::path &path) {
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd) ::fsync(fd.get());
}

}  // namespace

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

TempDirectory::TempDirectory(const fs::path &sibling_of) {
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
    throw std::system_error(errno, std::generic_category(),
                            "cannot create a temporary directory beside " + sibling_of.string());
}

TempDirectory::~TempDirectory() {
    if (!path_.empty()) {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
}

void TempDirectory::commit_to(const fs::path &target) {
    // RENAME_NOREPLACE: a plain rename would silently replace an empty directory created at the
    // destination since the check.
    if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) != 0) {
        throw std::system_error(errno, std::generic_category(),
                                "cannot move the built repository to " + target.string());
    }
    fsync_path(target.parent_path().empty() ? fs::path(".") : target.parent_path());
    path_.clear();
}

}  // namespace tea::git
