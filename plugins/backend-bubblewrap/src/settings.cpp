#include "settings.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tea/plugin.hpp>
#include <type_traits>

namespace tea::bwrap {

Settings parse_settings(std::string_view text) {
    using nlohmann::json;
    const auto doc = json::parse(text, nullptr, false);
    if (!doc.is_object()) {
        throw tea::sdk::Invalid("[plugin.bubblewrap] must be a table");
    }
    Settings s;
    auto number = [&](const std::string &key, auto &out, std::uint64_t min) {
        const auto &v = doc[key];
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() < min) {
            throw tea::sdk::Invalid("plugin.bubblewrap." + key +
                                    ": expected an integer >= " + std::to_string(min));
        }
        out = static_cast<std::remove_reference_t<decltype(out)>>(v.get<std::uint64_t>());
    };
    auto strings = [&](const std::string &key, std::vector<std::string> &out) {
        const auto &v = doc[key];
        if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const json &i) {
                return i.is_string() && !i.get<std::string>().empty() &&
                       i.get<std::string>()[0] == '/';
            })) {
            throw tea::sdk::Invalid("plugin.bubblewrap." + key +
                                    ": expected an array of absolute paths");
        }
        out = v.get<std::vector<std::string>>();
    };
    for (const auto &[key, value] : doc.items()) {
        if (key == "bwrap" || key == "sandbox_user") {
            if (!value.is_string() || value.get<std::string>().empty()) {
                throw tea::sdk::Invalid("plugin.bubblewrap." + key + ": expected a string");
            }
            // Attack: a relative path is found from the working directory, which may be a
            // workspace whose target planted its own program there for the next call to run.
            if (key == "bwrap" && value.get<std::string>().find('/') != std::string::npos &&
                value.get<std::string>()[0] != '/') {
                throw tea::sdk::Invalid(
                    "plugin.bubblewrap.bwrap: expected an absolute path or a program name, not the "
                    "relative path \"" +
                    value.get<std::string>() + "\" (it would be found from the working directory)");
            }
            (key == "bwrap" ? s.bwrap : s.sandbox_user) = value.get<std::string>();
        } else if (key == "cpu_seconds") {
            number(key, s.cpu_seconds, 0);
        } else if (key == "file_size_bytes") {
            number(key, s.file_size_bytes, 0);
        } else if (key == "processes") {
            number(key, s.processes, 0);
        } else if (key == "tmpfs_bytes") {
            number(key, s.tmpfs_bytes, 4096);
        } else if (key == "call_dir_bytes") {
            number(key, s.call_dir_bytes, 4096);
        } else if (key == "max_socket_masks") {
            number(key, s.max_socket_masks, 0);
        } else if (key == "socket_walk_entries") {
            number(key, s.socket_walk_entries, 1);
        } else if (key == "socket_dirs") {
            strings(key, s.socket_dirs);
        } else if (key == "sys_paths") {
            strings(key, s.sys_paths);
        } else {
            throw tea::sdk::Invalid("plugin.bubblewrap." + key +
                                    ": unknown key (known: bwrap, sandbox_user, cpu_seconds, "
                                    "file_size_bytes, processes, tmpfs_bytes, call_dir_bytes, "
                                    "max_socket_masks, "
                                    "socket_walk_entries, socket_dirs, sys_paths)");
        }
    }
    return s;
}

}  // namespace tea::bwrap
