// What every call starts from: the configuration, the runtime's own paths and the plugins found.
#pragma once

#include "config/config.hpp"
#include "plugins/loader.hpp"
#include "util/runtime_paths.hpp"

namespace tea::call {

struct Runtime {
    config::Config config;
    RuntimePaths paths;
    plugins::Registry registry;
};

}  // namespace tea::call
