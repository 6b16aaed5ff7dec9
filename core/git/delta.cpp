#include "git/delta.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace tea::git {
namespace {

std::optional<std::uint64_t> delta_varint(std::span<const unsigned char> delta, std::size_t &at) {
    std::uint64_t value = 0;
    int shift = 0;
    unsigned char c = 0;
    do {
        if (at >= delta.size() || shift > 57) return std::nullopt;
        c = delta[at++];
        value |= std::uint64_t{c & 0x7fU} << shift;
        shift += 7;
    } while ((c & 0x80) != 0);
    return value;
}

}  // namespace

std::optional<Bytes> apply_delta(std::span<const unsigned char> base,
                                 std::span<const unsigned char> delta) {
    std::size_t at = 0;
    const auto base_size = delta_varint(delta, at);
    const auto result_size = delta_varint(delta, at);
    if (!base_size || !result_size || *base_size != base.size() ||
        *result_size > (std::uint64_t{1} << 32))
        return std::nullopt;
    // The result size comes from the project's delta: memory is reserved for what a delta of
    // this base usually makes, and grows only as instructions make more, never past the claim.
    Bytes out;
    out.reserve(static_cast<std::size_t>(
        std::min<std::uint64_t>(*result_size, base.size() + delta.size())));
    while (at < delta.size()) {
        const unsigned char op = delta[at++];
        if ((op & 0x80) != 0) {
            std::size_t copy_offset = 0, copy_size = 0;
            for (unsigned bit = 0; bit < 4; ++bit)
                if ((op & (1U << bit)) != 0) {
                    if (at >= delta.size()) return std::nullopt;
                    copy_offset |= std::size_t{delta[at++]} << (8 * bit);
                }
            for (unsigned bit = 0; bit < 3; ++bit)
                if ((op & (0x10U << bit)) != 0) {
                    if (at >= delta.size()) return std::nullopt;
                    copy_size |= std::size_t{delta[at++]} << (8 * bit);
                }
            if (copy_size == 0) copy_size = 0x10000;
            if (copy_offset > base.size() || copy_size > base.size() - copy_offset ||
                copy_size > *result_size - out.size())
                return std::nullopt;
            const auto from = base.begin() + static_cast<std::ptrdiff_t>(copy_offset);
            out.insert(out.end(), from, from + static_cast<std::ptrdiff_t>(copy_size));
        } else if (op != 0) {
            if (op > delta.size() - at || op > *result_size - out.size()) return std::nullopt;
            const auto from = delta.begin() + static_cast<std::ptrdiff_t>(at);
            out.insert(out.end(), from, from + op);
            at += op;
        } else {
            return std::nullopt;
        }
    }
    if (out.size() != *result_size) return std::nullopt;
    return out;
}

}  // namespace tea::git
