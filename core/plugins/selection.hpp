// Choosing the plugins a command uses, by configuration: the core knows kinds,
// never plugin names.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "plugins/loader.hpp"
#include "util/runtime_paths.hpp"

namespace tea::plugins {

// The folders searched for manifests, in order: each folder of TEA_PLUGIN_PATH (for
// development), the runtime's own plugins.d, the system's (<sysconfdir>/tea-evaluate/plugins.d),
// the user's $XDG_CONFIG_HOME/tea-evaluate/plugins.d, then each [plugins] paths entry.
struct SearchPath {
    std::vector<std::filesystem::path> dirs;
    // What a root runtime leaves out: the user's plugins.d, and the [plugins] paths of the user's
    // file. HOME and XDG_CONFIG_HOME may still be the invoking user's (sudo -E), who would then
    // choose the code root runs.
    std::vector<std::filesystem::path> skipped;
};
SearchPath manifest_search_path(const config::Config &config, const RuntimePaths &paths,
                                bool as_root, const char *plugin_path_variable);

// The same for this process: as root when the effective uid is 0, TEA_PLUGIN_PATH read with
// secure_getenv (never from a set-id start). Warns in one line naming what it skipped that
// exists.
std::vector<std::filesystem::path> manifest_search_path(const config::Config &config,
                                                        const RuntimePaths &paths);

struct Selected {
    const LoadedPlugin *plugin = nullptr;
    std::unique_ptr<Instance> instance;
    bool chosen_by_auto = false;
};

// The configured backend, created and probed. Exit 2 when the configuration
// names a plugin that is missing, refused or rejects its table; exit 12 when
// the backend (or, for "auto", every backend of the order) is unavailable.
Selected select_backend(const Registry &registry, const config::Config &config);

// The configured observer, created and probed, or an empty Selected for "none". For "auto"
// the first installed observer of audit.auto_order; exit 12 when it cannot work or none is
// installed, since an audit that was expected must not silently go missing.
Selected select_observer(const Registry &registry, const config::Config &config);

// The configured egress plugin (egress.plugin), created and probed. Exit 2 when it is missing or
// refused; exit 12 when it cannot work on this host: a call that lists hosts never runs without
// the route it asked for, nor with one nobody decides on.
Selected select_egress(const Registry &registry, const config::Config &config);

// The login adapter `name` (a registry entry's "login", exec --login), created and probed. Exit 2
// when it is missing, refused or not a login adapter; exit 12 when it cannot work on this host.
Selected select_login(const Registry &registry, const config::Config &config,
                      const std::string &name);

}  // namespace tea::plugins
