// The SHA-1 of a pack's or an index's bytes, which git stores as the file's last 20 bytes and
// checks when it reads the file. It guards against a torn or damaged file only: no object id is
// computed with it (the ids are the project's, found by the history walk), so a chosen-prefix
// collision gains an attacker nothing here (docs/architecture.md). OpenSSL's SHA-1, which
// libgit2's own dependencies already load into the git module.
#pragma once

#include <array>
#include <cstddef>
#include <memory>

struct evp_md_ctx_st;

namespace tea::git {

using Sha1Digest = std::array<unsigned char, 20>;

class PackChecksum {
   public:
    // Throws std::runtime_error when OpenSSL cannot start a SHA-1 digest.
    PackChecksum();
    PackChecksum(PackChecksum &&) noexcept = default;
    PackChecksum &operator=(PackChecksum &&) noexcept = default;
    ~PackChecksum() = default;

    void update(const unsigned char *data, std::size_t size);
    // The digest of everything updated; the checksum is spent afterwards.
    Sha1Digest finish();

   private:
    struct Free {
        void operator()(evp_md_ctx_st *context) const;
    };
    std::unique_ptr<evp_md_ctx_st, Free> context_;
};

}  // namespace tea::git
