// The SHA-1 of a pack's or an index's bytes, which git stores as the file's last 20 bytes and
// checks when it reads the file. It guards against a torn or damaged file only: no object id is
// computed with it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace tea::git {

using Sha1Digest = std::array<unsigned char, 20>;

class PackChecksum {
   public:
    void update(const unsigned char *data, std::size_t size);
    Sha1Digest finish();

   private:
    void compress(const unsigned char *block);
    std::array<std::uint32_t, 5> state_{0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    std::array<unsigned char, 64> block_{};
    std::size_t used_ = 0;
    std::uint64_t length_ = 0;
};

}  // namespace tea::git
