// The host-unchanged detector: a manifest of a host tree that no target may change (the
// evaluation folder, the project's git directory, files outside the workspace named in the
// configuration), taken before a run and again after it; any difference is named.
//
// An entry's manifest line is its path, type, permission bits, owner, size, and a SHA-256 of a
// file's content or a link's text (a link is never followed, so a link planted in place of a file
// is a change of type, and a re-pointed one a change of text). Directories are compared by what
// they hold, not by their size, which depends on the file system's bookkeeping. Modification
// times are left out: reading the tree (the runtime's own git reads included) may touch them, and
// a content change shows in the hash. A tree the walk could not read whole, or a file past the
// hashing bounds, is named in the manifest's `unreached`, and a comparison involving one is not a
// proof of "unchanged": the caller refuses it.
//
// `run` takes the manifests around its trials (leak_detectors.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "files/tree_walk.hpp"

namespace tea::evaluation {

struct ManifestEntry {
    files::TreeEntryType type = files::TreeEntryType::other;
    std::uint32_t mode = 0;
    unsigned uid = 0;
    unsigned gid = 0;
    std::uint64_t size = 0;
    std::string sha256;  // hex, of a file's content or a link's text; empty otherwise
};

struct HostManifestLimits {
    std::uint64_t max_file_bytes = std::uint64_t{1} << 30U;   // hashed of any one file
    std::uint64_t max_total_bytes = std::uint64_t{8} << 30U;  // hashed in the whole tree
    files::TreeLimits tree;
};

struct HostManifest {
    std::filesystem::path root;
    std::map<std::string, ManifestEntry> entries;  // by path relative to the root ("." itself)
    std::vector<std::string> unreached;            // "path: reason", as the walk and hashing say
    [[nodiscard]] bool complete() const { return unreached.empty(); }
};

// Walks and hashes the tree at `root`. A root that is a file or a link is the manifest's one
// entry, ".". Throws tea::Error when the root does not exist or cannot be opened.
HostManifest take_host_manifest(const std::filesystem::path &root,
                                const HostManifestLimits &limits = {});

struct ManifestChange {
    enum class Kind { added, removed, changed };
    std::string path;
    Kind kind = Kind::changed;
    std::string what;  // for a change: each field that differs, "mode 0644 -> 0600, content"
};
const char *to_string(ManifestChange::Kind kind);

// The differences from `before` to `after`, in path order.
std::vector<ManifestChange> compare_host_manifests(const HostManifest &before,
                                                   const HostManifest &after);

// The hex SHA-256 of `bytes`, as a manifest hashes a link's text.
std::string sha256_hex(std::string_view bytes);

// {"root", "changes": [{"path", "kind", "what"}], "unreached": [...]} for a run's records.
nlohmann::json host_changes_record(const HostManifest &before, const HostManifest &after,
                                   const std::vector<ManifestChange> &changes);

}  // namespace tea::evaluation
