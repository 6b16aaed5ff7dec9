#include "redaction/secret_matcher.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace tea::redaction {

// The trie of the secrets as inserted (in sorted order, so each state's children are made in the
// order of their bytes), before it is renumbered breadth-first.
struct SecretTrie {
    std::vector<std::uint32_t> parent{0};
    std::vector<unsigned char> byte{0};
    std::vector<std::uint32_t> depth{0};
    std::vector<bool> terminal{false};

    std::uint32_t add_child(std::uint32_t of, unsigned char b) {
        if (parent.size() >= std::numeric_limits<std::uint32_t>::max()) {
            throw std::length_error("too many secret bytes for one matcher");
        }
        const auto id = static_cast<std::uint32_t>(parent.size());
        parent.push_back(of);
        byte.push_back(b);
        depth.push_back(depth[of] + 1);
        terminal.push_back(false);
        return id;
    }
};

namespace {

std::size_t common_prefix(const std::string &a, const std::string &b) {
    const auto limit = std::min(a.size(), b.size());
    std::size_t n = 0;
    while (n < limit && a[n] == b[n]) ++n;
    return n;
}

SecretTrie build_trie(const std::vector<std::string> &sorted) {
    SecretTrie trie;
    std::vector<std::uint32_t> path{0};  // the states of the previous secret, by depth
    const std::string *previous = nullptr;
    for (const auto &secret : sorted) {
        const std::size_t shared = previous == nullptr ? 0 : common_prefix(*previous, secret);
        path.resize(shared + 1);
        for (std::size_t j = shared; j < secret.size(); ++j) {
            path.push_back(trie.add_child(path.back(), static_cast<unsigned char>(secret[j])));
        }
        trie.terminal[path.back()] = true;
        previous = &secret;
    }
    return trie;
}

// The trie's states in breadth-first order: the root, its children in the order of their bytes,
// their children, and so on.
std::vector<std::uint32_t> breadth_first(const SecretTrie &trie) {
    const std::size_t states = trie.parent.size();
    std::vector<std::uint32_t> children_begin(states + 1, 0);
    for (std::size_t v = 1; v < states; ++v) ++children_begin[trie.parent[v] + 1];
    for (std::size_t v = 1; v <= states; ++v) children_begin[v] += children_begin[v - 1];
    std::vector<std::uint32_t> children(states - 1);
    auto next = children_begin;
    for (std::size_t v = 1; v < states; ++v) {
        children[next[trie.parent[v]]++] = static_cast<std::uint32_t>(v);
    }
    std::vector<std::uint32_t> order{0};
    order.reserve(states);
    for (std::size_t at = 0; at < order.size(); ++at) {
        const auto u = order[at];
        order.insert(order.end(), children.begin() + children_begin[u],
                     children.begin() + children_begin[u + 1]);
    }
    return order;
}

bool test_bit(const std::uint64_t *bits, unsigned index) noexcept {
    return ((bits[index >> 6U] >> (index & 63U)) & 1U) != 0;
}

void set_bit(std::uint64_t *bits, unsigned index) noexcept {
    bits[index >> 6U] |= std::uint64_t{1} << (index & 63U);
}

template <unsigned Bits>
unsigned block_hash(const unsigned char *at) noexcept {
    std::uint32_t block = 0;
    std::memcpy(&block, at, sizeof block);
    return (block * 0x9E3779B1U) >> (32U - Bits);
}

}  // namespace

SecretMatcher::SecretMatcher(const std::vector<std::string> &secrets) {
    std::vector<std::string> sorted;
    sorted.reserve(secrets.size());
    for (const auto &s : secrets) {
        if (!s.empty()) sorted.push_back(s);
    }
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    count_ = sorted.size();
    for (const auto &s : sorted) longest_ = std::max(longest_, s.size());
    build_filters(sorted);
    build_classes(sorted);
    build_states(build_trie(sorted));
    build_dense_rows();
}

void SecretMatcher::build_filters(const std::vector<std::string> &sorted) {
    std::size_t shortest = longest_;
    for (const auto &s : sorted) shortest = std::min(shortest, s.size());
    pair_filter_ = shortest >= 2;
    for (const auto &s : sorted) {
        const unsigned b0 = static_cast<unsigned char>(s[0]);
        set_bit(first_bytes_.data(), b0);
        if (pair_filter_) {
            const unsigned b1 = static_cast<unsigned char>(s[1]);
            set_bit(first_pairs_.data(), b0 | (b1 << 8U));
        }
    }
    if (shortest < kGramBytes + 2) return;  // a stride of 1 or 2 would gain nothing
    stride_ = shortest - kGramBytes + 1;
    for (const auto &s : sorted) {
        const auto *bytes = reinterpret_cast<const unsigned char *>(s.data());
        for (std::size_t j = 0; j + kGramBytes <= shortest; ++j) {
            set_bit(blocks_.data(), block_hash<kBlockBits>(bytes + j));
        }
    }
}

void SecretMatcher::build_classes(const std::vector<std::string> &sorted) {
    // Each byte some secret holds is a class of its own; the other bytes share class 0, which
    // leads to the root from every state (when every byte is used, there is no such class).
    std::array<bool, 256> used{};
    for (const auto &s : sorted) {
        for (const char c : s) used[static_cast<unsigned char>(c)] = true;
    }
    const bool all_used = std::all_of(used.begin(), used.end(), [](bool u) { return u; });
    classes_ = all_used ? 0 : 1;
    for (unsigned b = 0; b < 256; ++b) {
        if (used[b]) class_of_[b] = static_cast<std::uint8_t>(classes_++);
    }
}

void SecretMatcher::build_states(const SecretTrie &trie) {
    // Breadth-first numbering: a state's failure link and its dense row's fallback lie before it,
    // and the states nearest the root, which a scan visits most, come first.
    const auto order = breadth_first(trie);  // position -> trie state
    const std::size_t states = order.size();
    std::vector<std::uint32_t> rank(states);
    for (std::size_t at = 0; at < states; ++at) rank[order[at]] = static_cast<std::uint32_t>(at);
    first_child_.assign(states + 1, static_cast<State>(states));
    byte_in_.resize(states);
    depth_.resize(states);
    for (std::size_t v = states; v-- > 1;)
        first_child_[rank[trie.parent[order[v]]]] = static_cast<State>(v);
    for (std::size_t v = states; v-- > 0;) {
        // A state without children: its range is empty, at its successor's start.
        if (first_child_[v] == states && v + 1 < states) first_child_[v] = first_child_[v + 1];
        byte_in_[v] = trie.byte[order[v]];
        depth_[v] = trie.depth[order[v]];
    }
    fail_.assign(states, kRoot);
    longest_match_.assign(states, 0);
    for (std::size_t v = 1; v < states; ++v) {
        const State parent = rank[trie.parent[order[v]]];
        if (parent != kRoot) {
            State f = fail_[parent];
            while ((fail_[v] = child(f, byte_in_[v])) == kRoot && f != kRoot) f = fail_[f];
        }
        longest_match_[v] = trie.terminal[order[v]] ? depth_[v] : longest_match_[fail_[v]];
    }
    const std::uint32_t filter_width = pair_filter_ ? 2 : 1;
    flags_.assign(states, 0);
    for (std::size_t v = 0; v < states; ++v) {
        if (longest_match_[v] != 0) flags_[v] |= kMatch;
        if (depth_[v] < filter_width) flags_[v] |= kShallow;
    }
}

void SecretMatcher::build_dense_rows() {
    dense_count_ = static_cast<State>(std::min(depth_.size(), kDenseStates));
    dense_.assign(static_cast<std::size_t>(dense_count_) * classes_, kRoot);
    for (State v = 0; v < dense_count_; ++v) {
        State *row = dense_.data() + static_cast<std::size_t>(v) * classes_;
        if (v != kRoot) {
            const State *fallback = dense_.data() + static_cast<std::size_t>(fail_[v]) * classes_;
            std::copy(fallback, fallback + classes_, row);
        }
        for (State c = first_child_[v]; c < first_child_[v + 1]; ++c) {
            row[class_of_[byte_in_[c]]] = c;
        }
    }
}

SecretMatcher::State SecretMatcher::child(State of, unsigned char byte) const noexcept {
    const auto begin = byte_in_.begin() + first_child_[of];
    const auto end = byte_in_.begin() + first_child_[of + 1];
    const auto it = std::lower_bound(begin, end, byte);
    return it != end && *it == byte ? static_cast<State>(it - byte_in_.begin()) : kRoot;
}

SecretMatcher::State SecretMatcher::step_sparse(State state, unsigned char byte) const noexcept {
    for (;;) {
        if (state < dense_count_) {
            return dense_[static_cast<std::size_t>(state) * classes_ + class_of_[byte]];
        }
        const State next = child(state, byte);
        if (next != kRoot) return next;
        state = fail_[state];
    }
}

std::size_t SecretMatcher::first_pair(const unsigned char *data, std::size_t from,
                                      std::size_t to) const noexcept {
    for (; from < to; ++from) {
        const unsigned pair = data[from] | (static_cast<unsigned>(data[from + 1]) << 8U);
        if (test_bit(first_pairs_.data(), pair)) return from;
    }
    return from;
}

std::size_t SecretMatcher::skip(const unsigned char *data, std::size_t from,
                                std::size_t size) const noexcept {
    if (!pair_filter_) {
        while (from < size && !test_bit(first_bytes_.data(), data[from])) ++from;
        return from;
    }
    if (stride_ != 0) {
        std::size_t block = from;
        for (; block + kGramBytes <= size; block += stride_) {
            if (!test_bit(blocks_.data(), block_hash<kBlockBits>(data + block))) [[likely]]
                continue;
            // The starts this block speaks for: (block - stride_, block].
            const std::size_t begin = block - std::min(block - from, stride_ - 1);
            const std::size_t start = first_pair(data, begin, block + 1);
            if (start <= block) return start;
        }
        if (block != from) from = block - stride_ + 1;  // every start before it is ruled out
    }
    // The last bytes, whose blocks lie past the end: each position that has a second byte.
    if (from + 1 >= size) return from;
    return first_pair(data, from, size - 1);
}

std::size_t SecretMatcher::advance(State &state, const unsigned char *data, std::size_t size,
                                   std::uint32_t &match_length) const noexcept {
    match_length = 0;
    if (longest_ == 0) return size;
    State s = state;
    std::size_t i = 0;
    while (i < size) {
        if (s == kRoot) {
            // At the root no byte before `i` can be part of a secret that ends later, so the
            // bytes that no secret starts with pass without stepping the automaton.
            i = skip(data, i, size);
            if (i >= size) break;
            s = step(kRoot, data[i++]);
            if (pair_filter_) {
                if (i >= size) break;  // the last byte has no second byte to test yet
                s = step(s, data[i++]);
            }
            if ((flags_[s] & kMatch) != 0) {
                match_length = longest_match_[s];
                break;
            }
            continue;
        }
        s = step(s, data[i++]);
        const std::uint8_t f = flags_[s];
        if (f == 0) [[likely]]
            continue;
        if ((f & kMatch) != 0) {
            match_length = longest_match_[s];
            break;
        }
        // A shallow state stands for its last depth bytes alone: the same as the root before
        // them, from where the skip loop goes on.
        i -= depth_[s];
        s = kRoot;
    }
    state = s;
    return i;
}

}  // namespace tea::redaction
