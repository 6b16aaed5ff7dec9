// What a plugin's name may be, wherever one is written (the configuration, a registry entry's
// login, a manifest). Header-only: the evaluation model links no more of the core than it includes.
#pragma once

#include <algorithm>
#include <string_view>

namespace tea {

inline bool is_valid_plugin_name(std::string_view name) {
    // A plugin name is a manifest's file name too: no separators, no leading dot,
    // nothing a terminal or a log line would misread.
    if (name.empty() || name.size() > 64 || name[0] == '.' || name[0] == '-') {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_' || c == '.';
    });
}

}  // namespace tea
