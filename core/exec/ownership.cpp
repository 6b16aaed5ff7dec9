#include "exec/ownership.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <tea/dirents.hpp>
#include <utility>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::exec {
namespace {

namespace stdfs = std::filesystem;
using FileKey = OwnershipLoan::FileKey;

bool is_kept(const stdfs::path &p, const std::vector<stdfs::path> &kept) {
    const auto normal = p.lexically_normal();
    return std::any_of(kept.begin(), kept.end(),
                       [&](const stdfs::path &k) { return k.lexically_normal() == normal; });
}

bool is_kept(const struct stat &st, const std::vector<FileIdentity> &kept) {
    return std::any_of(kept.begin(), kept.end(), [&](const FileIdentity &k) {
        return k.dev == st.st_dev && k.ino == st.st_ino;
    });
}

FileKey key(const struct stat &st) {
    return {st.st_dev, st.st_ino};
}

bool same_file(const struct stat &a, const struct stat &b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// A directory the walk has yet to enter: named in its parent, which stays open until every
// directory named in it has been entered.
struct Pending {
    std::shared_ptr<UniqueFd> parent;
    std::string name;
    stdfs::path path;
    struct stat st {};
};

// Visits each entry beneath the directory open as `top` (at `top_path`), without following a
// link anywhere: visit(parent, name, st, self) with `parent` the descriptor of the directory that
// holds the entry, `st` what fstatat said of it, and `self` the entry's own descriptor for a
// directory (-1 otherwise). A directory is entered from its parent's descriptor (openat with
// O_NOFOLLOW | O_DIRECTORY) and must be the very one the walk looked at, so one swapped for a link
// or another directory between the look and the entry leads the walk nowhere. Nothing at or below
// a kept path, by name or by device and inode, is visited.
template <class Visit>
void walk(int top, const stdfs::path &top_path, const std::vector<stdfs::path> &kept,
          const std::vector<FileIdentity> &kept_ids, Visit &&visit) {
    std::vector<Pending> pending;
    const auto list = [&](const std::shared_ptr<UniqueFd> &dir, const stdfs::path &at) {
        std::vector<std::string> names;
        const UniqueFd reader{::openat(dir->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
        if (!reader) {
            return;
        }
        tea::dirents::for_each(reader.get(), [&](const dirent64 &e) {
            names.emplace_back(e.d_name);
            return true;
        });
        for (auto &name : names) {
            auto path = at / name;
            struct stat st {};
            if (is_kept(path, kept) ||
                ::fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
                is_kept(st, kept_ids)) {
                continue;
            }
            if (S_ISDIR(st.st_mode)) {
                pending.push_back({dir, std::move(name), std::move(path), st});
            } else {
                visit(dir->get(), name.c_str(), st, -1);
            }
        }
    };
    const auto top_fd =
        std::make_shared<UniqueFd>(::openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!*top_fd) {
        return;
    }
    list(top_fd, top_path);
    while (!pending.empty()) {
        auto next = std::move(pending.back());
        pending.pop_back();
        auto self =
            std::make_shared<UniqueFd>(::openat(next.parent->get(), next.name.c_str(),
                                                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        struct stat now {};
        if (!*self || ::fstat(self->get(), &now) != 0 || !same_file(now, next.st)) {
            continue;  // gone, or swapped since it was looked at: never followed
        }
        visit(next.parent->get(), next.name.c_str(), now, self->get());
        list(self, next.path);
    }
}

UniqueFd open_top(const stdfs::path &top) {
    return UniqueFd{::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
}

// A directory through its own descriptor, anything else by name in its verified parent without
// following a link: the entry the walk looked at, or a link left in its place, is changed, and
// never a file elsewhere.
int change_owner(int parent, const char *name, int self, uid_t uid, gid_t gid) {
    return self >= 0 ? ::fchown(self, uid, gid)
                     : ::fchownat(parent, name, uid, gid, AT_SYMLINK_NOFOLLOW);
}

}  // namespace

OwnershipLoan::OwnershipLoan(const std::vector<stdfs::path> &trees, uid_t uid, gid_t gid,
                             const std::vector<stdfs::path> &kept,
                             const std::vector<stdfs::path> &disposable)
    : kept_(kept) {
    for (const auto &k : kept_) {
        struct stat st {};
        if (::lstat(k.c_str(), &st) == 0) {
            kept_ids_.push_back({st.st_dev, st.st_ino});
        }
    }
    for (const auto &top : trees) {
        if (is_kept(top, kept_)) {
            continue;
        }
        const auto fd = open_top(top);
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) != 0 || is_kept(st, kept_ids_)) {
            throw runtime_failure("cannot lend " + top.string() +
                                  " to the sandbox identity: not a directory");
        }
        Tree tree{top, st.st_uid, st.st_gid, {}, is_kept(top, disposable)};
        tree.owners.emplace(key(st), std::make_pair(st.st_uid, st.st_gid));
        trees_.push_back(std::move(tree));
        auto &lent = trees_.back();
        int error = ::fchown(fd.get(), uid, gid) == 0 ? 0 : errno;
        std::string failed = top.string();
        walk(fd.get(), top, kept_, kept_ids_,
             [&](int parent, const char *name, const struct stat &s, int self) {
                 // A hard link shares its inode with a file outside the tree; handing
                 // it over would hand over that file too.
                 if (self < 0 && s.st_nlink > 1) {
                     ++skipped_;
                     return;
                 }
                 // Recorded even past a failure, so that the restore gives each its own owner.
                 lent.owners.emplace(key(s), std::make_pair(s.st_uid, s.st_gid));
                 if (error == 0 && change_owner(parent, name, self, uid, gid) != 0) {
                     error = errno;
                     failed = name;
                 }
             });
        if (error != 0) {
            restore();
            throw runtime_failure("cannot lend " + failed + " (in " + top.string() +
                                  ") to the sandbox identity: " + errno_text(error));
        }
    }
}

OwnershipLoan::~OwnershipLoan() {
    restore();
}

void OwnershipLoan::restore() {
    for (auto &tree : trees_) {
        if (tree.disposable) {
            // Everything in it goes with it. Until then only the sandbox identity and root may
            // enter it, and every confined view covers the private root it lies in.
            continue;
        }
        const auto fd = open_top(tree.top);
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) != 0) {
            continue;
        }
        const auto owner_of = [&](const struct stat &s) {
            const auto it = tree.owners.find(key(s));
            return it != tree.owners.end() ? it->second : std::make_pair(tree.uid, tree.gid);
        };
        const auto [top_uid, top_gid] = owner_of(st);
        ::fchown(fd.get(), top_uid, top_gid);
        walk(fd.get(), tree.top, kept_, kept_ids_,
             [&](int parent, const char *name, const struct stat &s, int self) {
                 if (self < 0 && s.st_nlink > 1 && tree.owners.count(key(s)) == 0) {
                     // Made by the target as a second name of a file: leave the inode as it is
                     // rather than chown a file that may live elsewhere, but never setuid or
                     // setgid: left on the host, it would run as the sandbox identity, which
                     // owns every lent tree of every running call.
                     if (S_ISREG(s.st_mode) && (s.st_mode & (S_ISUID | S_ISGID)) != 0) {
                         const UniqueFd file{::openat(
                             parent, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
                         struct stat now {};
                         if (file && ::fstat(file.get(), &now) == 0 && same_file(now, s)) {
                             ::fchmod(file.get(), now.st_mode & 0777U);
                         }
                     }
                     return;
                 }
                 const auto [u, g] = owner_of(s);
                 change_owner(parent, name, self, u, g);
             });
    }
    trees_.clear();
}

}  // namespace tea::exec
