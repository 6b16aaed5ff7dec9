// Splitting a path into the components a walk still has to take, for code that follows a path
// one name at a time (through links it knows of, say) instead of letting the kernel resolve it.
//
//   std::vector<std::string> rest;
//   tea::path_components::push_reversed(rest, "a//b/c");  // rest: c, b, a: the next one last
#ifndef TEA_PATH_COMPONENTS_HPP
#define TEA_PATH_COMPONENTS_HPP

#include <string>
#include <string_view>
#include <vector>

namespace tea::path_components {

// Appends the non-empty components of `path` to `rest` from the last to the first, so that
// rest.back() is the next one to walk; "." and ".." are kept as they are.
inline void push_reversed(std::vector<std::string> &rest, std::string_view path) {
    std::size_t end = path.size();
    while (end > 0) {
        const std::size_t slash = path.rfind('/', end - 1);
        const std::size_t begin = slash == std::string_view::npos ? 0 : slash + 1;
        if (end > begin) {
            rest.emplace_back(path.substr(begin, end - begin));
        }
        if (slash == std::string_view::npos) {
            break;
        }
        end = slash;
    }
}

}  // namespace tea::path_components

#endif  // TEA_PATH_COMPONENTS_HPP
