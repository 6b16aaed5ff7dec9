#include "path_checks.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>
#include <tea/plugin.hpp>

#include "paths.hpp"

namespace tea::bwrap {

namespace fs = std::filesystem;

void check_path(const std::string &path, const std::string &what) {
    for (const char ch : path) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\'' || c == '\\' || c < 0x20 || c == 0x7f) {
            throw tea::sdk::Unavailable(
                "the " + what +
                " path holds a quote, a backslash or a control character, which the confinement "
                "refuses to carry: " +
                nlohmann::json(path).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) +
                "; rename it");
        }
    }
    if (path.empty() || path[0] != '/') {
        throw tea::sdk::Unavailable("the " + what + " path is not absolute: " + path);
    }
}

void check_protected_path(const std::string &path) {
    std::error_code ec;
    const auto status = fs::symlink_status(path, ec);
    if (ec || !fs::exists(status)) {
        throw tea::sdk::Unavailable("the read-only path " + path +
                                    " does not exist, so it cannot be protected");
    }
    if (fs::is_symlink(status)) {
        throw tea::sdk::Unavailable("the read-only path " + path +
                                    " is a symbolic link; name the place it leads to");
    }
    const auto real = fs::canonical(path, ec);
    if (ec || real != normal(path)) {
        throw tea::sdk::Unavailable("the read-only path " + path +
                                    " passes through a symbolic link (it resolves to " +
                                    (ec ? ec.message() : real.string()) + "); name the real path");
    }
}

}  // namespace tea::bwrap
