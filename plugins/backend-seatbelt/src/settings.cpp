#include "settings.hpp"

#include <nlohmann/json.hpp>
#include <tea/plugin.hpp>

namespace tea::seatbelt {

Settings parse_settings(std::string_view json_text) {
    const auto doc = nlohmann::json::parse(json_text, nullptr, false);
    if (!doc.is_object()) {
        throw tea::sdk::Invalid("[plugin.seatbelt] must be a table");
    }
    Settings s;
    for (const auto &[key, value] : doc.items()) {
        if (key == "sandbox_exec") {
            if (!value.is_string() || value.get<std::string>().empty() ||
                value.get<std::string>().front() != '/') {
                throw tea::sdk::Invalid("plugin.seatbelt.sandbox_exec: expected an absolute path");
            }
            s.sandbox_exec = value.get<std::string>();
        } else if (key == "cpu_seconds" || key == "file_size_bytes" || key == "processes") {
            if (!value.is_number_unsigned()) {
                throw tea::sdk::Invalid("plugin.seatbelt." + key + ": expected an integer >= 0");
            }
            (key == "cpu_seconds"       ? s.cpu_seconds
             : key == "file_size_bytes" ? s.file_size_bytes
                                        : s.processes) = value.get<std::uint64_t>();
        } else {
            throw tea::sdk::Invalid(
                "plugin.seatbelt." + key +
                ": unknown key (known keys here: sandbox_exec, cpu_seconds, file_size_bytes, "
                "processes)");
        }
    }
    return s;
}

}  // namespace tea::seatbelt
