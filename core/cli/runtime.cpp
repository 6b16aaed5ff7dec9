#include "cli/runtime.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "files/private_dirs.hpp"
#include "plugins/selection.hpp"

namespace tea::cli {

call::Runtime load_runtime(const CommonOptions &options) {
    config::Sources sources;
    sources.explicit_file = options.config_file;
    sources.backend_flag = options.backend;
    sources.observer_flag = options.observer;
    auto config = config::load(sources);
    auto paths = RuntimePaths::detect();
    auto registry = plugins::Registry::discover(plugins::manifest_search_path(config, paths),
                                                paths.plugin_libdir);
    return call::Runtime{std::move(config), std::move(paths), std::move(registry)};
}

std::unique_ptr<call::CallSession> open_session(const CommonOptions &common, bool opt_out) {
    const auto started = std::chrono::steady_clock::now();
    auto runtime = load_runtime(common);
    if (opt_out) {
        if (common.backend && *common.backend != runtime.config.opt_out_backend) {
            spdlog::warn("the evaluation opts out of confinement: --backend {} is not used",
                         *common.backend);
        }
        runtime.config.backend = runtime.config.opt_out_backend;
    }
    return std::make_unique<call::CallSession>(std::move(runtime), files::default_private_root(),
                                               started);
}

}  // namespace tea::cli
