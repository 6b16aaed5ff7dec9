// Plugin manifests: plugins.d/<name>.toml, one per installed plugin.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/trust.hpp"

namespace tea::plugins {

enum class Kind { backend = 1, observer = 2, egress = 3, login = 4 };

std::string_view to_string(Kind kind);
std::optional<Kind> kind_from_string(std::string_view text);

struct Manifest {
    std::filesystem::path file;  // the manifest itself
    std::string name;
    Kind kind = Kind::backend;
    int abi_major = 0;
    int abi_minor = 0;
    std::filesystem::path library;  // resolved to an existing file (as written, by parse_manifest)
};

// Reads and checks one manifest, opened as `trust` requires (trust.hpp). `library` is a basename
// looked up beside the manifest, then in plugin_libdir, or an absolute path. Throws
// std::runtime_error with a sentence that names the file.
Manifest read_manifest(const std::filesystem::path &file,
                       const std::filesystem::path &plugin_libdir,
                       const TrustPolicy &trust = TrustPolicy::for_this_process());

// read_manifest in its two steps, so that a manifest whose library is missing still names its
// plugin: the manifest read and checked with `library` as written, then the library found.
Manifest parse_manifest(const std::filesystem::path &file,
                        const TrustPolicy &trust = TrustPolicy::for_this_process());
std::filesystem::path locate_library(const Manifest &manifest,
                                     const std::filesystem::path &plugin_libdir);

// The *.toml files of each directory, in order, each directory's sorted by name.
std::vector<std::filesystem::path> list_manifests(const std::vector<std::filesystem::path> &dirs);

}  // namespace tea::plugins
