#include "util/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>

namespace tea::log {

void init(int verbosity) {
    // Thread-safe: an observer is probed on a thread of its own while the call's plan is
    // prepared, and plugins log from threads of their own.
    auto logger = spdlog::stderr_logger_mt("tea-evaluate");
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
