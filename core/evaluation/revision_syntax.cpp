#include "evaluation/revision_syntax.hpp"

#include <cctype>

namespace tea::evaluation {
namespace {

constexpr std::size_t kMaxRevisionLength = 256;

bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-' ||
           c == '/' || c == '+';
}

}  // namespace

std::optional<std::string> malformed_revision(const std::string &revision) {
    if (revision.empty()) return std::string{"is empty"};
    if (revision.size() > kMaxRevisionLength) return std::string{"is over 256 characters"};
    // A leading '-' is read as an option by every git command the revision reaches.
    if (revision.front() == '-') return std::string{"starts with '-'"};
    std::size_t name_end = 0;
    while (name_end < revision.size() && name_char(revision[name_end])) ++name_end;
    const std::string name = revision.substr(0, name_end);
    if (name.empty() || name.front() == '/' || name.back() == '/' || name.back() == '.' ||
        name.find("..") != std::string::npos || name.find("//") != std::string::npos ||
        name.find("/.") != std::string::npos || name.front() == '.') {
        return std::string{"is neither a commit id nor a branch or tag name"};
    }
    for (std::size_t i = name_end; i < revision.size(); ++i) {
        const char c = revision[i];
        if (c == '~' || c == '^') continue;
        if (std::isdigit(static_cast<unsigned char>(c)) != 0 && i > name_end) continue;
        return "holds '" + std::string(1, c) +
               "' after the name; only ~N and ^N steps may follow a commit id or a name";
    }
    return std::nullopt;
}

}  // namespace tea::evaluation
