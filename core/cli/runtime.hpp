// What every command starts from: the configuration, the runtime's paths and
// the plugins found, plus the signals the runtime watches.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "plugins/loader.hpp"
#include "util/fd.hpp"
#include "util/runtime_paths.hpp"

namespace tea::cli {

struct CommonOptions {
    std::optional<std::filesystem::path> config_file;
    std::optional<std::string> backend;
    std::optional<std::string> observer;
    bool json = false;
    int verbose = 0;
    bool quiet = false;
};

struct Runtime {
    config::Config config;
    RuntimePaths paths;
    plugins::Registry registry;
};

Runtime load_runtime(const CommonOptions &options);

// SIGINT, SIGTERM and SIGHUP are blocked from start-up and read from this
// descriptor, so a signal ends the running call and the runtime cleans up
// before it exits.
class Signals {
   public:
    static Signals &instance();
    void install();
    [[nodiscard]] int fd() const { return fd_.get(); }
    // The signal received and not yet acted on, or 0.
    int pending();

   private:
    UniqueFd fd_;
    int seen_ = 0;
};

}  // namespace tea::cli
