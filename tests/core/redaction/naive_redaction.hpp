// The reference the redactor is checked against, written for obviousness rather than speed:
// every secret is searched for at every offset of the whole text, every byte of every occurrence
// is marked, and each run of marked bytes joined by overlapping occurrences becomes one marker.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tea::test {

struct NaiveRedaction {
    std::string text;                 // the redacted text
    std::vector<std::string> passed;  // the runs of the input that were kept, in order
    std::size_t markers = 0;          // the runs replaced
};

inline NaiveRedaction naive_redaction(std::string_view input,
                                      const std::vector<std::string> &secrets) {
    std::vector<std::pair<std::size_t, std::size_t>> found;  // [begin, end)
    for (const auto &secret : secrets) {
        if (secret.empty()) continue;
        for (auto at = input.find(secret); at != std::string_view::npos;
             at = input.find(secret, at + 1)) {
            found.emplace_back(at, at + secret.size());
        }
    }
    std::sort(found.begin(), found.end());
    NaiveRedaction out;
    std::size_t kept_from = 0;
    for (std::size_t i = 0; i < found.size();) {
        const std::size_t begin = found[i].first;
        std::size_t end = found[i].second;
        for (++i; i < found.size() && found[i].first < end; ++i)
            end = std::max(end, found[i].second);
        if (begin > kept_from) out.passed.emplace_back(input.substr(kept_from, begin - kept_from));
        out.text.append(input.substr(kept_from, begin - kept_from)).append("[redacted]");
        ++out.markers;
        kept_from = end;
    }
    if (input.size() > kept_from) out.passed.emplace_back(input.substr(kept_from));
    out.text.append(input.substr(kept_from));
    return out;
}

}  // namespace tea::test
