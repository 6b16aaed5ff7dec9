// The known name a mistyped one most likely meant, so that a refusal of an unknown name says what
// to write instead: the configuration's keys, the command line's subcommands and options, the
// evaluation format's fields and a probe's entry. Header-only: the evaluation model links no more
// of the core than it includes.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tea {

// The edits (a letter inserted, removed or replaced, or two neighbours swapped) that turn `a` into
// `b`, letters compared without case: "rnu" is one edit from "run", "interfaceid" none from
// "interfaceId".
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
    const auto same = [](char x, char y) {
        return std::tolower(static_cast<unsigned char>(x)) ==
               std::tolower(static_cast<unsigned char>(y));
    };
    // Three rows of the table: two back (for a swap), the previous one and the one being made.
    std::vector<std::size_t> before(b.size() + 1);
    std::vector<std::size_t> previous(b.size() + 1);
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        previous[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = same(a[i - 1], b[j - 1]) ? 0 : 1;
            row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost});
            if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1])) {
                row[j] = std::min(row[j], before[j - 2] + 1);
            }
        }
        std::swap(before, previous);
        std::swap(previous, row);
    }
    return previous[b.size()];
}

// The candidate nearest to `word`, when it is near enough to be the same word mistyped: at most one
// edit for every three letters of the word (one for a shorter word), and fewer edits than the word
// has letters, so that a word is never "corrected" by replacing all of it. The first of equally
// near candidates; none when none is near.
inline std::optional<std::string> closest_match(std::string_view word,
                                                const std::vector<std::string> &candidates) {
    const std::size_t allowed = std::max<std::size_t>(1, word.size() / 3);
    std::optional<std::string> best;
    std::size_t best_distance = allowed + 1;
    for (const auto &candidate : candidates) {
        if (candidate == word) {
            continue;
        }
        const auto distance = edit_distance(word, candidate);
        if (distance < best_distance && distance < word.size()) {
            best = candidate;
            best_distance = distance;
        }
    }
    return best;
}

// "; did you mean 'NAME'?" for the closest candidate, or "" when none is near: the tail of a
// refusal that has already named the unknown word.
inline std::string did_you_mean(std::string_view word, const std::vector<std::string> &candidates) {
    const auto match = closest_match(word, candidates);
    return match ? "; did you mean '" + *match + "'?" : std::string{};
}

// The names as a message lists them: "a, b, c".
inline std::string listed(const std::vector<std::string> &names) {
    std::string out;
    for (const auto &name : names) {
        out += (out.empty() ? "" : ", ") + name;
    }
    return out;
}

}  // namespace tea
