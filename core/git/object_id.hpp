// Object ids as libgit2 holds them (git_oid): hashed for unordered containers, printed and parsed
// as git's 40 hex digits, and taken from the raw 20 bytes a tree, pack or index stores.
#pragma once

#include <git2.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

namespace tea::git {

struct OidHash {
    std::size_t operator()(const git_oid &oid) const noexcept {
        std::size_t h = 0;
        std::memcpy(&h, oid.id, sizeof h);
        return h;
    }
};
struct OidEqual {
    bool operator()(const git_oid &a, const git_oid &b) const noexcept {
        return git_oid_equal(&a, &b) != 0;
    }
};
using OidSet = std::unordered_set<git_oid, OidHash, OidEqual>;

inline std::string hex(const git_oid &oid) {
    std::array<char, GIT_OID_HEXSZ + 1> buffer{};
    git_oid_tostr(buffer.data(), buffer.size(), &oid);
    return buffer.data();
}

inline std::optional<git_oid> parse_oid(std::string_view text) {
    if (text.size() != GIT_OID_HEXSZ) return std::nullopt;
    git_oid oid;
    if (git_oid_fromstrn(&oid, text.data(), text.size()) != 0) return std::nullopt;
    return oid;
}

inline git_oid oid_from_raw(const unsigned char *raw) {
    git_oid oid;
    git_oid_fromraw(&oid, raw);
    return oid;
}

}  // namespace tea::git
