#include "plugins/manifest.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <tea/read_all.hpp>

#include "config/config.hpp"
#include "util/toml.hpp"

namespace tea::plugins {
namespace {

std::runtime_error refusal(const std::filesystem::path &file, const std::string &what) {
    return std::runtime_error{file.string() + ": " + what};
}

std::string required_string(const toml::table &root, const std::filesystem::path &file,
                            std::string_view key) {
    const auto *node = root.get(key);
    if (node == nullptr) {
        throw refusal(file, "missing key '" + std::string{key} + "'");
    }
    if (!node->is_string() || node->as_string()->get().empty()) {
        throw refusal(file, "key '" + std::string{key} + "' must be a non-empty string");
    }
    return node->as_string()->get();
}

// "MAJOR.MINOR", both small decimal numbers.
bool parse_abi(std::string_view text, int &major, int &minor) {
    const auto dot = text.find('.');
    if (dot == std::string_view::npos) {
        return false;
    }
    const auto a = text.substr(0, dot);
    const auto b = text.substr(dot + 1);
    auto parse = [](std::string_view s, int &out) {
        if (s.empty() || s.size() > 4) {
            return false;
        }
        const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
        return ec == std::errc{} && ptr == s.data() + s.size();
    };
    return parse(a, major) && parse(b, minor);
}

}  // namespace

std::string_view to_string(Kind kind) {
    switch (kind) {
        case Kind::backend:
            return "backend";
        case Kind::observer:
            return "observer";
        case Kind::egress:
            return "egress";
        case Kind::login:
            return "login";
    }
    return "unknown";
}

std::optional<Kind> kind_from_string(std::string_view text) {
    for (const Kind k : {Kind::backend, Kind::observer, Kind::egress, Kind::login}) {
        if (to_string(k) == text) {
            return k;
        }
    }
    return std::nullopt;
}

Manifest read_manifest(const std::filesystem::path &file,
                       const std::filesystem::path &plugin_libdir, const TrustPolicy &trust) {
    auto m = parse_manifest(file, trust);
    m.library = locate_library(m, plugin_libdir);
    return m;
}

Manifest parse_manifest(const std::filesystem::path &file, const TrustPolicy &trust) {
    // Read from the descriptor the trust checks were made on.
    const auto text = read_all(open_trusted(file, trust).get());
    toml::table root;
    try {
        root = toml::parse(text, file.string());
    } catch (const toml::parse_error &e) {
        throw refusal(file, "line " + std::to_string(e.source().begin.line) +
                                ": invalid TOML: " + std::string{e.description()});
    }
    for (const auto &[key, value] : root) {
        const auto k = key.str();
        if (k != "name" && k != "kind" && k != "abi" && k != "library" && k != "description") {
            throw refusal(file, "unknown key '" + std::string{k} +
                                    "' (expected name, kind, abi, library, description)");
        }
    }
    Manifest m;
    m.file = file;
    m.name = required_string(root, file, "name");
    if (!config::is_valid_plugin_name(m.name)) {
        throw refusal(file, "name '" + m.name + "' is not a valid plugin name");
    }
    const auto kind = required_string(root, file, "kind");
    const auto parsed_kind = kind_from_string(kind);
    if (!parsed_kind) {
        throw refusal(file,
                      "kind '" + kind +
                          "' is not a plugin kind (expected backend, observer, egress or login)");
    }
    m.kind = *parsed_kind;
    const auto abi = required_string(root, file, "abi");
    if (!parse_abi(abi, m.abi_major, m.abi_minor)) {
        throw refusal(file, "abi '" + abi + "' is not of the form MAJOR.MINOR");
    }

    const auto *library_node = root.get("library");
    if (library_node == nullptr) {
        throw refusal(file,
                      "names no library (expected key 'library' with the plugin's "
                      "shared object, e.g. \"libtea-backend-x.so\")");
    }
    if (!library_node->is_string() || library_node->as_string()->get().empty()) {
        throw refusal(file, "key 'library' must be a non-empty string");
    }
    m.library = library_node->as_string()->get();
    // A relative path with directories could climb out of the plugin directories.
    if (!m.library.is_absolute() && m.library.has_parent_path()) {
        throw refusal(
            file, "library '" + m.library.string() + "' must be a basename or an absolute path");
    }
    return m;
}

std::filesystem::path locate_library(const Manifest &manifest,
                                     const std::filesystem::path &plugin_libdir) {
    const auto &library = manifest.library;
    std::vector<std::filesystem::path> candidates;
    if (library.is_absolute()) {
        candidates.push_back(library);
    } else {
        candidates.push_back(manifest.file.parent_path() / library);
        candidates.push_back(plugin_libdir / library);
    }
    std::string looked;
    for (const auto &candidate : candidates) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(candidate, ec)) {
            return candidate;
        }
        looked += (looked.empty() ? "" : ", ") + candidate.string();
    }
    throw refusal(manifest.file,
                  "library '" + library.string() + "' was not found (looked for " + looked + ")");
}

std::vector<std::filesystem::path> list_manifests(const std::vector<std::filesystem::path> &dirs) {
    std::vector<std::filesystem::path> out;
    for (const auto &dir : dirs) {
        std::error_code ec;
        std::vector<std::filesystem::path> here;
        for (std::filesystem::directory_iterator it{dir, ec}, end; !ec && it != end;
             it.increment(ec)) {
            if (it->path().extension() == ".toml") {
                here.push_back(it->path());
            }
        }
        std::sort(here.begin(), here.end());
        out.insert(out.end(), here.begin(), here.end());
    }
    return out;
}

}  // namespace tea::plugins
