#include "sbpl_string.hpp"

#include <nlohmann/json.hpp>
#include <tea/bytes.hpp>
#include <tea/plugin.hpp>

namespace tea::seatbelt {

namespace {

// The path as the refusal shows it: JSON-escaped, bytes that are not UTF-8 replaced, so the
// sentence itself stays one readable line.
std::string shown(std::string_view path) {
    return nlohmann::json(std::string{path})
        .dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void check_path(std::string_view path, std::string_view what) {
    if (path.empty() || path.front() != '/') {
        throw tea::sdk::Unavailable("the " + std::string{what} +
                                    " path is not absolute: " + shown(path));
    }
    for (const char ch : path) {
        const auto c = static_cast<unsigned char>(ch);
        // A quote would end the literal and let the rest of the path write rules of its own; a
        // backslash starts an escape whose reading we do not control; a control character (a line
        // break among them) is refused because no profile line can carry it unambiguously.
        if (c == '"' || c == '\'' || c == '\\' || c < 0x20 || c == 0x7f) {
            throw tea::sdk::Unavailable(
                "the " + std::string{what} + " path " + shown(path) +
                " holds a quote, a backslash or a control character, which no Seatbelt profile "
                "can carry; rename it, or set \"confinement\": false");
        }
    }
    // APFS and HFS+ store names as UTF-8: a path that is not cannot name a file on macOS, and the
    // profile compiler's reading of such bytes is unknown.
    if (!tea::bytes::is_valid_utf8(path)) {
        throw tea::sdk::Unavailable("the " + std::string{what} + " path " + shown(path) +
                                    " is not UTF-8, which no macOS file system holds; rename it");
    }
}

std::string sbpl_string(std::string_view path, std::string_view what) {
    check_path(path, what);
    std::string out;
    out.reserve(path.size() + 2);
    out += '"';
    out += path;
    out += '"';
    return out;
}

}  // namespace tea::seatbelt
