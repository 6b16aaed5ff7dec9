#include "git/repository_cache.hpp"

#include <sstream>
#include <string_view>
#include <system_error>

#include "git/libgit2.hpp"
#include "git/object_id.hpp"
#include "git/repository_files.hpp"

namespace tea::git {
namespace {

namespace fs = std::filesystem;

// Bumped whenever the layout of a built repository changes, so an old cache entry is not reused.
constexpr std::string_view kCacheFormat = "tea-private-repository 1";

std::string serialize(const PrivateRepositoryResult &r) {
    std::ostringstream out;
    out << kCacheFormat << '\n'
        << r.commit_id << '\n'
        << r.commits << ' ' << r.trees << ' ' << r.blobs << ' ' << r.tags << '\n';
    for (const auto &id : r.missing_objects) out << id << '\n';
    return out.str();
}

std::optional<PrivateRepositoryResult> deserialize(const std::string &text) {
    std::istringstream in(text);
    std::string line;
    if (!std::getline(in, line) || line != kCacheFormat) return std::nullopt;
    PrivateRepositoryResult r;
    if (!std::getline(in, r.commit_id) || !std::getline(in, line)) return std::nullopt;
    std::istringstream counts(line);
    if (!(counts >> r.commits >> r.trees >> r.blobs >> r.tags)) return std::nullopt;
    while (std::getline(in, line))
        if (!line.empty()) r.missing_objects.push_back(line);
    return r;
}

// Copies a built repository; pack files, which nobody ever writes in place, are hard-linked when
// the file system allows, everything else is copied so that configuring one copy (attach_worktree)
// cannot change another.
void copy_repository(const fs::path &from, const fs::path &to) {
    fs::create_directory(to);
    for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator();
         ++it) {
        const fs::path target = to / fs::relative(it->path(), from);
        if (it->is_directory()) {
            fs::create_directory(target);
            continue;
        }
        const bool pack_file = it->path().parent_path().filename() == "pack";
        std::error_code ec;
        if (pack_file) fs::create_hard_link(it->path(), target, ec);
        if (!pack_file || ec) fs::copy_file(it->path(), target);
    }
}

bool still_missing(git_repository *project, const PrivateRepositoryResult &cached) {
    if (cached.missing_objects.empty()) return true;
    git_odb *raw = nullptr;
    if (git_repository_odb(&raw, project) != 0) return false;
    const GitPtr<git_odb, git_odb_free> odb(raw);
    for (const auto &text : cached.missing_objects) {
        const auto id = parse_oid(text);
        if (!id || git_odb_exists(odb.get(), &*id) != 0) return false;
    }
    return true;
}

}  // namespace

std::string repository_cache_key(const fs::path &common_dir, const std::string &commit_hex,
                                 const std::vector<std::string> &withheld,
                                 const std::vector<TagRef> &tags) {
    std::string material(kCacheFormat);
    material += "\nrepository " + common_dir.string() + "\ncommit " + commit_hex;
    for (const auto &path : withheld) material += "\nwithheld " + path;
    for (const auto &tag : tags) material += "\ntag " + tag.name + ' ' + hex(tag.target);
    git_oid key;
    git_odb_hash(&key, material.data(), material.size(), GIT_OBJECT_BLOB);
    return hex(key);
}

std::optional<PrivateRepositoryResult> reuse_cached(const fs::path &entry, git_repository *project,
                                                    const std::string &commit_hex,
                                                    const fs::path &destination) {
    const auto text = read_file(entry / "result");
    if (!text) return std::nullopt;
    auto cached = deserialize(*text);
    if (!cached || cached->commit_id != commit_hex || !still_missing(project, *cached) ||
        !fs::is_directory(entry / "repository"))
        return std::nullopt;
    TempDirectory temp(destination);
    copy_repository(entry / "repository", temp.path());
    temp.commit_to(destination);
    cached->reused_from_cache = true;
    return cached;
}

void store_in_cache(const fs::path &cache_directory, const std::string &key, const fs::path &built,
                    const PrivateRepositoryResult &result) {
    fs::create_directories(cache_directory);
    const fs::path entry = cache_directory / key;
    TempDirectory temp(entry);
    copy_repository(built, temp.path() / "repository");
    write_file(temp.path() / "result", serialize(result));
    std::error_code ec;
    fs::remove_all(entry, ec);  // an entry that could not be used (damaged or stale)
    try {
        temp.commit_to(entry);
    } catch (const std::system_error &) {
        // Another run stored the same entry first; either copy serves.
    }
}

}  // namespace tea::git
