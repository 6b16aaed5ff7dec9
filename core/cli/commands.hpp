// The subcommands of tea-evaluate. Each returns the process exit status.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli/runtime.hpp"

namespace tea::cli {

struct ExecOptions {
    std::optional<std::filesystem::path> workspace;  // default: the current directory
    std::vector<std::string> withhold;
    std::optional<std::int64_t> timeout_ms;
    bool clean_env = false;
    std::vector<std::string> env;  // NAME=VALUE or NAME (the host's value)
    std::vector<std::string> command;
};

int exec_command(const CommonOptions &common, const ExecOptions &options);
int plugins_command(const CommonOptions &common);

}  // namespace tea::cli
