#include "plugins/trust.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <tea/path_components.hpp>
#include <vector>

#include "util/error.hpp"

namespace tea::plugins {
namespace {

namespace fs = std::filesystem;

// As the kernel's own limit on links in one lookup.
constexpr int max_links = 40;

std::string octal_mode(mode_t mode) {
    std::array<char, 8> text{};
    std::snprintf(text.data(), text.size(), "%04o", static_cast<unsigned>(mode & 07777U));
    return text.data();
}

class Walk {
   public:
    Walk(const fs::path &path, const TrustPolicy &policy) : path_(path), policy_(policy) {}

    [[noreturn]] void refuse(const fs::path &where, const std::string &why) const {
        throw std::runtime_error(path_.string() + ": not loaded as root: " +
                                 (where == path_ ? std::string{"it"} : where.string()) + " " + why +
                                 "; a plugin's files, and every folder and link on the way to "
                                 "them, must be root's and writable by root alone");
    }

    // The owner of an entry decides who may replace it in a sticky folder, and for a file or a
    // folder who may change it.
    void check_owner(const struct stat &st, const fs::path &where) const {
        if (st.st_uid != policy_.owner) {
            refuse(where, "is owned by uid " + std::to_string(st.st_uid));
        }
    }

    void check(int fd, const struct stat &st, const fs::path &where) const {
        check_owner(st, where);
        // A sticky folder lets others add names but not replace or remove root's entries, and
        // every entry the walk takes is checked to be root's; so /tmp may lie on the way.
        const bool sticky_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0;
        if ((st.st_mode & S_IWGRP) != 0 && !sticky_dir) {
            refuse(where, "is writable by its group (mode " + octal_mode(st.st_mode) + ")");
        }
        if ((st.st_mode & S_IWOTH) != 0 && !sticky_dir) {
            refuse(where, "is writable by every user (mode " + octal_mode(st.st_mode) + ")");
        }
        // A FUSE server, which an unprivileged user may run, reports whatever owner and mode it
        // likes: root's files there could be anyone's.
        struct statfs fsinfo {};
        if (::fstatfs(fd, &fsinfo) != 0) {
            refuse(where, "cannot be examined (" + errno_text(errno) + ")");
        }
        if (static_cast<unsigned long>(fsinfo.f_type) == FUSE_SUPER_MAGIC) {
            refuse(where, "lies on a FUSE file system, whose owners any user's server may report");
        }
    }

    UniqueFd open_root() const {
        UniqueFd root{::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)};
        struct stat st {};
        if (!root || ::fstat(root.get(), &st) != 0) {
            refuse("/", "cannot be opened (" + errno_text(errno) + ")");
        }
        check(root.get(), st, "/");
        return root;
    }

    UniqueFd open_file() {
        std::vector<std::string> rest;
        path_components::push_reversed(rest, fs::absolute(path_).string());
        UniqueFd dir = open_root();
        fs::path at{"/"};
        int links = 0;
        while (!rest.empty()) {
            const std::string name = std::move(rest.back());
            rest.pop_back();
            if (name == ".") {
                continue;
            }
            const fs::path here = name == ".." ? at.parent_path() : at / name;
            struct stat st {};
            if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                refuse(here, "cannot be examined (" + errno_text(errno) + ")");
            }
            if (S_ISLNK(st.st_mode)) {
                // Followed here, not by the kernel, so that every folder it leads through is
                // checked too.
                check_owner(st, here);
                if (++links > max_links) {
                    refuse(here, "leads through more than 40 symbolic links");
                }
                std::string target(static_cast<std::size_t>(PATH_MAX), '\0');
                const auto n = ::readlinkat(dir.get(), name.c_str(), target.data(), target.size());
                if (n <= 0 || static_cast<std::size_t>(n) >= target.size()) {
                    refuse(here, "is a symbolic link that cannot be read");
                }
                target.resize(static_cast<std::size_t>(n));
                if (target.front() == '/') {
                    dir = open_root();
                    at = "/";
                }
                path_components::push_reversed(rest, target);
                continue;
            }
            if (rest.empty()) {
                // The file itself. A name swapped for a link since fstatat fails (O_NOFOLLOW);
                // what is checked is what the descriptor holds.
                UniqueFd file{::openat(dir.get(), name.c_str(),
                                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
                if (!file || ::fstat(file.get(), &st) != 0) {
                    refuse(here, "cannot be opened (" + errno_text(errno) + ")");
                }
                if (!S_ISREG(st.st_mode)) {
                    refuse(here, "is not a regular file");
                }
                check(file.get(), st, here);
                return file;
            }
            UniqueFd next{
                ::openat(dir.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
            if (!next || ::fstat(next.get(), &st) != 0) {
                refuse(here, "cannot be opened as a folder (" + errno_text(errno) + ")");
            }
            check(next.get(), st, here);
            dir = std::move(next);
            at = here;
        }
        refuse(at, "is a folder, not a file");
    }

   private:
    fs::path path_;
    TrustPolicy policy_;
};

}  // namespace

TrustPolicy TrustPolicy::for_this_process() {
    return TrustPolicy{::geteuid() == 0, 0};
}

UniqueFd open_trusted(const std::filesystem::path &path, const TrustPolicy &policy) {
    if (policy.required) {
        return Walk{path, policy}.open_file();
    }
    UniqueFd fd{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
        throw std::runtime_error(path.string() + ": cannot be opened (" + errno_text(errno) + ")");
    }
    if (!S_ISREG(st.st_mode)) {
        throw std::runtime_error(path.string() + ": is not a regular file");
    }
    return fd;
}

}  // namespace tea::plugins
