#include "identity.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <tea/plugin.hpp>
#include <vector>

namespace tea::bwrap {

Identity sandbox_identity(const std::string &sandbox_user) {
    if (::geteuid() != 0) {
        return Identity{::geteuid(), ::getegid(), false};
    }
    passwd entry{};
    passwd *found = nullptr;
    std::vector<char> buffer(1024);
    while (::getpwnam_r(sandbox_user.c_str(), &entry, buffer.data(), buffer.size(), &found) ==
               ERANGE &&
           buffer.size() < (std::size_t{1} << 20U)) {
        buffer.resize(buffer.size() * 4);
    }
    if (found == nullptr) {
        throw sdk::Unavailable(
            "tea-evaluate runs as root, and the target must then run as the unprivileged "
            "account '" +
            sandbox_user +
            "', which does not exist. Create it (useradd --system --user-group --no-create-home "
            "--shell /usr/sbin/nologin " +
            sandbox_user +
            "), name another in [plugin.bubblewrap] sandbox_user, or run tea-evaluate as an "
            "unprivileged user");
    }
    // Root's files would belong to a target that runs as uid 0, namespace or not.
    if (found->pw_uid == 0 || found->pw_gid == 0) {
        throw sdk::Unavailable("the sandbox account '" + sandbox_user +
                               "' is root or in root's group; it must be unprivileged");
    }
    return Identity{found->pw_uid, found->pw_gid, true};
}

bool may_search(const struct stat &st, const char *path, const Identity &who) {
    if (!who.dropped) {
        return true;  // bubblewrap runs as the caller, who reached the path already
    }
    const mode_t search = st.st_uid == who.uid ? S_IXUSR : st.st_gid == who.gid ? S_IXGRP : S_IXOTH;
    if ((st.st_mode & search) != 0) {
        return true;
    }
    // A named entry of an access ACL could let the sandbox account search what the mode bits
    // deny it, and a socket taken for unreachable is left unmasked: with an ACL (or when one
    // cannot be ruled out) the directory counts as searchable.
    if (st.st_uid != who.uid) {
        const auto size = ::getxattr(path, "system.posix_acl_access", nullptr, 0);
        if (size > 0 || (size < 0 && errno != ENODATA && errno != ENOTSUP)) {
            return true;
        }
    }
    return false;
}

std::optional<std::filesystem::path> unreachable_ancestor(const std::filesystem::path &path,
                                                          const Identity &who) {
    if (!who.dropped) {
        return std::nullopt;  // bubblewrap runs as the caller, who reached the path already
    }
    std::filesystem::path current;
    for (const auto &part : path) {
        current /= part;
        struct stat st {};
        if (::stat(current.c_str(), &st) != 0) {
            return std::nullopt;  // missing: nothing to bind there
        }
        if (S_ISDIR(st.st_mode) && !may_search(st, current.c_str(), who)) {
            return current;
        }
    }
    return std::nullopt;
}

std::optional<LentTree> lent_tree(const std::string &top) {
    struct stat st {};
    if (::stat(top.c_str(), &st) != 0) {
        return std::nullopt;
    }
    return LentTree{std::filesystem::path{top}.lexically_normal(), st.st_uid, st.st_gid};
}

bool in_tree(const LentTree &tree, const std::filesystem::path &path) {
    const auto p = path.lexically_normal();
    const auto [t, q] = std::mismatch(tree.top.begin(), tree.top.end(), p.begin(), p.end());
    return t == tree.top.end() || (std::next(t) == tree.top.end() && t->empty());
}

struct stat seen_in(const LentTree &tree, struct stat st, const Identity &who) {
    // Any other id shows as the overflow id, which is never the identity's.
    constexpr uid_t overflow = 65534;
    st.st_uid = st.st_uid == tree.owner_uid ? who.uid : overflow;
    st.st_gid = st.st_gid == tree.owner_gid ? who.gid : overflow;
    return st;
}

std::optional<std::filesystem::path> unreachable_in_tree(const LentTree &tree,
                                                         const std::filesystem::path &path,
                                                         const Identity &who) {
    if (!who.dropped) {
        return std::nullopt;
    }
    std::filesystem::path current = tree.top;
    const auto below = path.lexically_normal().lexically_relative(tree.top);
    for (auto part = below.begin();; ++part) {
        struct stat st {};
        if (::stat(current.c_str(), &st) != 0) {
            return std::nullopt;  // missing: nothing to bind there
        }
        if (S_ISDIR(st.st_mode) && !may_search(seen_in(tree, st, who), current.c_str(), who)) {
            return current;
        }
        if (part == below.end() || *part == "." || part->empty()) {
            return std::nullopt;
        }
        current /= *part;
    }
}

}  // namespace tea::bwrap
