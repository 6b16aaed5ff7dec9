// Where a plugin finds a helper executable it ships beside the runtime's:
// <prefix>/libexec/tea-evaluate/<name>, the plugin's own library being
// <prefix>/lib/tea-evaluate/plugins/<library>.so (in the build tree as once installed).
//
//   const std::string helper = tea::helper_path::beside_plugin("tea-sandbox-helper");  // "" when
//                                                                                      // unknown
//
// The library is found from the address of this function, so it must be compiled into the plugin
// itself (hidden, as every plugin's inline functions are): each plugin gets its own copy, and it
// names that plugin's file. Header-only, C++17, POSIX with dladdr(3).
#ifndef TEA_HELPER_PATH_HPP
#define TEA_HELPER_PATH_HPP

#include <dlfcn.h>

#include <filesystem>
#include <string>

namespace tea::helper_path {

inline std::string beside_plugin(const char *name) {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void *>(&beside_plugin), &info) == 0 ||
        info.dli_fname == nullptr) {
        return {};
    }
    const auto prefix = std::filesystem::path{info.dli_fname}
                            .parent_path()
                            .parent_path()
                            .parent_path()
                            .parent_path();
    return (prefix / "libexec" / "tea-evaluate" / name).string();
}

}  // namespace tea::helper_path

#endif  // TEA_HELPER_PATH_HPP
