// The automaton that finds the secrets of a set in bytes (Aho-Corasick), built once per set.
//
// It reports, at each position of a stream where at least one secret ends, the length of the
// longest secret ending there: every shorter one ending at the same position is a suffix of it,
// so that one interval covers them all. It works on bytes; a secret with a newline, a NUL or
// bytes that are not UTF-8 is matched like any other.
//
// Speed: while the automaton stands at its root (the common case in a target's output) a skip
// loop looks for where a secret could start, and only there is the automaton stepped. When every
// secret is at least kGramBytes + 2 bytes long (m bytes, the shortest), the loop tests one
// block of kGramBytes bytes every m - kGramBytes + 1 bytes against a bitmap of the blocks that
// lie within the first m bytes of some secret: any occurrence holds one of the tested blocks
// within its first m bytes, so a block that is in no secret rules out every start position
// before it up to the previous one tested. The tests do not depend on each other, so the
// processor runs them side by side. Where a block is found, and for shorter secrets, each
// position's first two bytes are tested against a bitmap of the secrets' first two bytes (the
// first byte alone when a secret is one byte long). The states nearest the root (up to
// kDenseStates of them, in breadth-first order) have a full row of transitions over byte
// classes (each byte some secret holds is a class, every other byte is class 0, which leads to
// the root from anywhere); the deeper ones, which only a stream that really holds most of a
// secret's prefix reaches, keep their children and a failure link, so a long secret costs memory
// in proportion to its length.
//
// Immutable once built: any number of threads may scan with one matcher at once, each with
// its own State.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tea::redaction {

struct SecretTrie;  // what a matcher is built from (secret_matcher.cpp)

class SecretMatcher {
   public:
    using State = std::uint32_t;
    static constexpr State kRoot = 0;
    // The states with a full row of transitions: at most this many rows of at most 256 entries.
    static constexpr std::size_t kDenseStates = 4096;

    // The automaton of `secrets` (bytes). Empty strings and repeats are ignored.
    explicit SecretMatcher(const std::vector<std::string> &secrets);
    SecretMatcher() : SecretMatcher(std::vector<std::string>{}) {}

    // Whether the set holds no secret: every stream passes unchanged.
    [[nodiscard]] bool empty() const noexcept { return longest_ == 0; }
    // The length of the longest secret (0 when empty).
    [[nodiscard]] std::size_t longest() const noexcept { return longest_; }
    // The number of distinct secrets.
    [[nodiscard]] std::size_t size() const noexcept { return count_; }

    // Steps `state` over data[0, size) and stops just after the first position where a secret
    // ends: returns the number of bytes consumed, and sets `match_length` to the length of the
    // longest secret that ends with the last byte consumed (0 when none ended and every byte was
    // consumed).
    std::size_t advance(State &state, const unsigned char *data, std::size_t size,
                        std::uint32_t &match_length) const noexcept;

    // How many of the last bytes stepped over `state` stands for: the longest suffix of the
    // stream that is a prefix of some secret. No secret that ends later can start before it.
    [[nodiscard]] std::uint32_t depth(State state) const noexcept { return depth_[state]; }

   private:
    static constexpr std::uint8_t kMatch = 1;    // a secret ends at this state
    static constexpr std::uint8_t kShallow = 2;  // depth below the skip loop's filter width
    static constexpr std::size_t kGramBytes = 4;
    static constexpr unsigned kBlockBits = 16;  // the blocks' bitmap: 2^16 bits, hashed

    void build_filters(const std::vector<std::string> &sorted);
    void build_classes(const std::vector<std::string> &sorted);
    void build_states(const SecretTrie &trie);
    void build_dense_rows();

    [[nodiscard]] State step(State state, unsigned char byte) const noexcept {
        if (state < dense_count_) [[likely]] {
            return dense_[static_cast<std::size_t>(state) * classes_ + class_of_[byte]];
        }
        return step_sparse(state, byte);
    }
    [[nodiscard]] State step_sparse(State state, unsigned char byte) const noexcept;
    [[nodiscard]] State child(State of, unsigned char byte) const noexcept;  // or kRoot
    [[nodiscard]] std::size_t skip(const unsigned char *data, std::size_t from,
                                   std::size_t size) const noexcept;
    [[nodiscard]] std::size_t first_pair(const unsigned char *data, std::size_t from,
                                         std::size_t to) const noexcept;

    std::size_t longest_ = 0;
    std::size_t count_ = 0;
    bool pair_filter_ = false;  // every secret is at least two bytes long
    std::size_t stride_ = 0;    // between the blocks tested; 0: no block is tested
    std::array<std::uint64_t, (std::size_t{1} << kBlockBits) / 64> blocks_{};
    std::array<std::uint64_t, 65536 / 64> first_pairs_{};  // bit (b0 | b1 << 8): a secret starts so
    std::array<std::uint64_t, 256 / 64> first_bytes_{};    // bit b0: a secret starts with b0
    std::array<std::uint8_t, 256> class_of_{};
    std::size_t classes_ = 1;
    State dense_count_ = 1;
    std::vector<State> dense_;  // dense_count_ rows of classes_ next states
    // Per state, in breadth-first order (the root first, children of a state consecutive).
    std::vector<std::uint8_t> flags_;
    std::vector<std::uint32_t> depth_;
    std::vector<std::uint32_t> longest_match_;  // longest secret ending at the state, or 0
    std::vector<State> fail_;
    std::vector<State> first_child_;      // children of s: [first_child_[s], first_child_[s + 1])
    std::vector<unsigned char> byte_in_;  // the byte that leads into each state from its parent
};

}  // namespace tea::redaction
