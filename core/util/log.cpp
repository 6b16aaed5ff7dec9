#include "util/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>

namespace tea::log {

void init(int verbosity) {
    auto logger = spdlog::stderr_logger_st("tea-evaluate");
    logger->set_pattern("tea-evaluate: %^%l%$: %v");
    spdlog::level::level_enum level = spdlog::level::warn;
    if (verbosity < 0) {
        level = spdlog::level::err;
    } else if (verbosity == 1) {
        level = spdlog::level::info;
    } else if (verbosity >= 2) {
        level = spdlog::level::debug;
    }
    logger->set_level(level);
    spdlog::set_default_logger(logger);
}

}  // namespace tea::log
