// Where the runtime's own files are, found from the executable's location so
// the build tree and any install prefix share one layout.
#pragma once

#include <filesystem>

namespace tea {

struct RuntimePaths {
    std::filesystem::path prefix;         // <prefix>/bin/tea-evaluate
    std::filesystem::path manifest_dir;   // <prefix>/lib/tea-evaluate/plugins.d
    std::filesystem::path plugin_libdir;  // <prefix>/lib/tea-evaluate/plugins
    std::filesystem::path helper_dir;     // <prefix>/libexec/tea-evaluate
    // <sysconfdir>/tea-evaluate/plugins.d, the system's plugins: /etc/... for a /usr install.
    std::filesystem::path system_manifest_dir;

    // From /proc/self/exe; throws tea::Error (exit 125) when it cannot be read.
    static RuntimePaths detect();
    static RuntimePaths for_prefix(const std::filesystem::path &prefix);
};

}  // namespace tea
