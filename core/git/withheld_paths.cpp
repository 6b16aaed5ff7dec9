#include "git/withheld_paths.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace tea::git {

std::vector<std::string> normalize_withheld(const std::vector<std::string> &paths) {
    std::vector<std::string> result;
    for (const auto &path : paths) {
        std::vector<std::string> parts;
        std::string part;
        std::istringstream in(path);
        while (std::getline(in, part, '/'))
            if (!part.empty()) parts.push_back(part);
        if (parts.empty() || path.front() == '/')
            throw std::invalid_argument("withheld path \"" + path +
                                        "\" is not a repository-relative folder");
        std::string joined;
        for (const auto &p : parts) {
            if (p == "." || p == ".." || p.find('\0') != std::string::npos)
                throw std::invalid_argument("withheld path \"" + path +
                                            "\" must not contain \".\" or \"..\"");
            joined += (joined.empty() ? "" : "/") + p;
        }
        result.push_back(joined);
    }
    std::sort(result.begin(), result.end());
    result.erase(std::unique(result.begin(), result.end()), result.end());
    return result;
}

PathNode build_trie(const std::vector<std::string> &paths) {
    PathNode root;
    for (const auto &path : paths) {
        PathNode *node = &root;
        std::istringstream in(path);
        std::string part;
        while (std::getline(in, part, '/')) node = &node->children[part];
        node->withheld = true;
    }
    return root;
}

}  // namespace tea::git
