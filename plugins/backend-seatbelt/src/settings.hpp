// The [plugin.seatbelt] table.
#pragma once

#include <string>
#include <string_view>

namespace tea::seatbelt {

struct Settings {
    // The program that applies a profile. Looked up when a call runs, never at build time.
    std::string sandbox_exec = "/usr/bin/sandbox-exec";
};

// Throws tea::sdk::Invalid naming the key.
Settings parse_settings(std::string_view json_text);

}  // namespace tea::seatbelt
