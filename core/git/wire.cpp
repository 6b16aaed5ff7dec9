#include "git/wire.hpp"

#include <stdexcept>
#include <tea/json_bytes.hpp>

namespace tea::git::wire {

using nlohmann::json;

namespace {

const json &field(const json &doc, const char *name) {
    if (!doc.is_object() || !doc.contains(name)) {
        throw std::invalid_argument(std::string{"git module: missing field "} + name);
    }
    return doc[name];
}

std::vector<std::string> strings(const json &doc, const char *name) {
    return bytes::list_from_json(field(doc, name), name);
}

json paths_to_json(const std::vector<std::filesystem::path> &paths) {
    auto out = json::array();
    for (const auto &p : paths) {
        out.push_back(path_to_json(p));
    }
    return out;
}

std::size_t count(const json &doc, const char *name) {
    const auto &v = field(doc, name);
    if (!v.is_number_unsigned()) {
        throw std::invalid_argument(std::string{"git module: "} + name + " is not a count");
    }
    return v.get<std::size_t>();
}

bool flag(const json &doc, const char *name) {
    const auto &v = field(doc, name);
    if (!v.is_boolean()) {
        throw std::invalid_argument(std::string{"git module: "} + name + " is not a boolean");
    }
    return v.get<bool>();
}

}  // namespace

json path_to_json(const std::filesystem::path &path) {
    return bytes::to_json(path.native());
}

std::filesystem::path path_from_json(const json &doc, std::string_view name) {
    return std::filesystem::path{bytes::from_json(doc, name)};
}

json to_json(const WorkspaceSource &source) {
    return json{{"projectRoot", path_to_json(source.project_root)},
                {"git", source.git},
                {"commit", bytes::to_json(source.commit)},
                {"gitDir", path_to_json(source.git_dir)},
                {"worktreeGitDir", path_to_json(source.worktree_git_dir)},
                {"worktree", path_to_json(source.worktree)},
                {"enclosingGitDir", path_to_json(source.enclosing_git_dir)},
                {"prefix", bytes::to_json(source.prefix)},
                {"protectedPaths", paths_to_json(source.protected_paths)},
                {"excluded", bytes::list_to_json(source.excluded)}};
}

WorkspaceSource source_from_json(const json &doc) {
    WorkspaceSource s;
    s.project_root = path_from_json(field(doc, "projectRoot"), "projectRoot");
    s.git = flag(doc, "git");
    s.commit = bytes::from_json(field(doc, "commit"), "commit");
    s.git_dir = path_from_json(field(doc, "gitDir"), "gitDir");
    s.worktree_git_dir = path_from_json(field(doc, "worktreeGitDir"), "worktreeGitDir");
    s.worktree = path_from_json(field(doc, "worktree"), "worktree");
    s.enclosing_git_dir = path_from_json(field(doc, "enclosingGitDir"), "enclosingGitDir");
    s.prefix = bytes::from_json(field(doc, "prefix"), "prefix");
    for (const auto &p : strings(doc, "protectedPaths")) {
        s.protected_paths.emplace_back(p);
    }
    s.excluded = strings(doc, "excluded");
    return s;
}

json to_json(const Materialized &result) {
    return json{{"files", result.files}, {"skipped", result.skipped}};
}

Materialized materialized_from_json(const json &doc) {
    return Materialized{count(doc, "files"), count(doc, "skipped")};
}

json to_json(const PrivateRepositoryRequest &request) {
    return json{{"projectRepository", path_to_json(request.project_repository)},
                {"commit", bytes::to_json(request.commit)},
                {"withheldPaths", bytes::list_to_json(request.withheld_paths)},
                {"destination", path_to_json(request.destination)}};
}

PrivateRepositoryRequest request_from_json(const json &doc) {
    PrivateRepositoryRequest r;
    r.project_repository = path_from_json(field(doc, "projectRepository"), "projectRepository");
    r.commit = bytes::from_json(field(doc, "commit"), "commit");
    r.withheld_paths = strings(doc, "withheldPaths");
    r.destination = path_from_json(field(doc, "destination"), "destination");
    return r;
}

json to_json(const PrivateRepositoryResult &result) {
    return json{{"commitId", bytes::to_json(result.commit_id)},
                {"commits", result.commits},
                {"trees", result.trees},
                {"blobs", result.blobs},
                {"tags", result.tags},
                {"missingObjects", bytes::list_to_json(result.missing_objects)},
                {"reusedFromCache", result.reused_from_cache}};
}

PrivateRepositoryResult result_from_json(const json &doc) {
    PrivateRepositoryResult r;
    r.commit_id = bytes::from_json(field(doc, "commitId"), "commitId");
    r.commits = count(doc, "commits");
    r.trees = count(doc, "trees");
    r.blobs = count(doc, "blobs");
    r.tags = count(doc, "tags");
    r.missing_objects = strings(doc, "missingObjects");
    r.reused_from_cache = flag(doc, "reusedFromCache");
    return r;
}

json to_json(const std::vector<PatchedFile> &files) {
    auto out = json::array();
    for (const auto &f : files) {
        out.push_back(json{{"path", bytes::to_json(f.path)},
                           {"removed", f.removed},
                           {"content", bytes::to_json(f.content)},
                           {"executable", f.executable},
                           {"link", f.link},
                           {"submodule", f.submodule}});
    }
    return out;
}

std::vector<PatchedFile> patched_from_json(const json &doc) {
    if (!doc.is_array())
        throw std::invalid_argument("git module: the patched files are not a list");
    std::vector<PatchedFile> out;
    for (const auto &f : doc) {
        out.push_back(PatchedFile{bytes::from_json(field(f, "path"), "path"), flag(f, "removed"),
                                  bytes::from_json(field(f, "content"), "content"),
                                  flag(f, "executable"), flag(f, "link"), flag(f, "submodule")});
    }
    return out;
}

}  // namespace tea::git::wire
