#include "exec/ownership.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

#include "util/error.hpp"

namespace tea::exec {
namespace {

namespace stdfs = std::filesystem;

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

template <class Fn>
void walk(const stdfs::path &top, const std::vector<stdfs::path> &kept,
          const std::vector<FileIdentity> &kept_ids, Fn &&fn) {
    std::error_code ec;
    // Never follows links: a link in the tree must not carry the loan outside it.
    for (stdfs::recursive_directory_iterator it{top, ec}, end; !ec && it != end; it.increment(ec)) {
        if (is_kept(it->path(), kept)) {
            it.disable_recursion_pending();
            continue;
        }
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) != 0) {
            continue;
        }
        // By what it is as well as by name: a withheld folder reached under another name (its
        // parent renamed) is still never lent, nor is anything in it.
        if (is_kept(st, kept_ids)) {
            it.disable_recursion_pending();
            continue;
        }
        fn(it->path(), st);
    }
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
        struct stat st {};
        if (::lstat(top.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || is_kept(st, kept_ids_)) {
            throw runtime_error("cannot lend " + top.string() +
                                " to the sandbox identity: not a directory");
        }
        Tree tree{top, st.st_uid, st.st_gid, {}, is_kept(top, disposable)};
        tree.entries.push_back({top, st.st_uid, st.st_gid});
        walk(top, kept_, kept_ids_, [&](const stdfs::path &p, const struct stat &s) {
            // A hard link shares its inode with a file outside the tree; handing
            // it over would hand over that file too.
            if (!S_ISDIR(s.st_mode) && s.st_nlink > 1) {
                ++skipped_;
                return;
            }
            tree.entries.push_back({p, s.st_uid, s.st_gid});
        });
        trees_.push_back(std::move(tree));
        for (const auto &e : trees_.back().entries) {
            if (::lchown(e.path.c_str(), uid, gid) != 0) {
                const int error = errno;
                restore();
                throw runtime_error("cannot lend " + e.path.string() +
                                    " to the sandbox identity: " + errno_text(error));
            }
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
        std::unordered_map<std::string, std::pair<uid_t, gid_t>> owners;
        owners.reserve(tree.entries.size());
        for (const auto &e : tree.entries) {
            owners.emplace(e.path.string(), std::make_pair(e.uid, e.gid));
        }
        auto give_back = [&](const stdfs::path &p) {
            const auto it = owners.find(p.string());
            const auto [u, g] =
                it != owners.end() ? it->second : std::make_pair(tree.uid, tree.gid);
            ::lchown(p.c_str(), u, g);
        };
        give_back(tree.top);
        walk(tree.top, kept_, kept_ids_, [&](const stdfs::path &p, const struct stat &s) {
            if (!S_ISDIR(s.st_mode) && s.st_nlink > 1 && owners.count(p.string()) == 0) {
                // Made by the target as a second name of a file: leave the
                // inode as it is rather than chown a file that may live elsewhere,
                // but never setuid or setgid: left on the host, it would run as the
                // sandbox identity, which owns every lent tree of every running call.
                if (S_ISREG(s.st_mode) && (s.st_mode & (S_ISUID | S_ISGID)) != 0) {
                    ::chmod(p.c_str(), s.st_mode & 0777U);
                }
                return;
            }
            give_back(p);
        });
    }
    trees_.clear();
}

}  // namespace tea::exec
