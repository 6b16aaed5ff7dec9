#include "util/runtime_paths.hpp"

#include "util/error.hpp"

namespace tea {

RuntimePaths RuntimePaths::for_prefix(const std::filesystem::path &prefix) {
    return RuntimePaths{prefix, prefix / TEA_PLUGIN_MANIFESTDIR, prefix / TEA_PLUGIN_LIBDIR,
                        prefix / TEA_HELPER_DIR, TEA_SYSTEM_MANIFESTDIR};
}

RuntimePaths RuntimePaths::detect() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) {
        throw runtime_failure("cannot find the runtime's own executable through /proc/self/exe: " +
                              ec.message());
    }
    return for_prefix(exe.parent_path().parent_path());
}

}  // namespace tea
