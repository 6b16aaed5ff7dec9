// The [plugin.seatbelt] table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tea::seatbelt {

struct Settings {
    // The program that applies a profile. Looked up when a call runs, never at build time.
    std::string sandbox_exec = "/usr/bin/sandbox-exec";
    // The limits a call gets when its spec sets none, the bubblewrap backend's defaults: without
    // them a runaway target would spin or fill the disk unbounded (0 leaves the limit as it is).
    std::uint64_t cpu_seconds = 3600;
    std::uint64_t file_size_bytes = std::uint64_t{4} << 30U;
    // RLIMIT_NPROC counts every process of the user on the host: off unless asked for.
    std::uint64_t processes = 0;
};

// Throws tea::sdk::Invalid naming the key.
Settings parse_settings(std::string_view json_text);

}  // namespace tea::seatbelt
