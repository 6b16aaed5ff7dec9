// What every command starts from: the common options, and the configuration, the runtime's paths
// and the plugins found, loaded from them.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "call/runtime.hpp"
#include "call/session.hpp"

namespace tea::cli {

struct CommonOptions {
    std::optional<std::filesystem::path> config_file;
    std::optional<std::string> backend;
    std::optional<std::string> observer;
    bool json = false;
    int verbose = 0;
    bool quiet = false;
};

call::Runtime load_runtime(const CommonOptions &options);

// The session of a command's calls: the configuration and plugins loaded, the backend selected
// (exit 2 or 12 when it cannot) and the private root opened. An opted-out session takes
// confinement.opt_out_backend, whatever --backend says: the evaluation, not the command line,
// decides that its targets run unconfined.
std::unique_ptr<call::CallSession> open_session(const CommonOptions &common, bool opt_out = false);

}  // namespace tea::cli
