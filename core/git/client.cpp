// tea-evaluate's side of the git module (module_abi.h): the functions of workspace_source.hpp and
// private_repository.hpp, each a request to lib/tea-evaluate/libtea-git.so, loaded on first use.
#include <dlfcn.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tea/json_bytes.hpp>

#include "git/module_abi.h"
#include "git/wire.hpp"
#include "util/runtime_paths.hpp"

namespace tea::git {
namespace {

using nlohmann::json;

const tea_git_module &module() {
    static const tea_git_module *loaded = [] {
        const auto path = RuntimePaths::detect().prefix / TEA_GIT_MODULE;
        // Loaded from the runtime's own installation only, as the plugins are: a module found
        // on a search path could be anyone's.
        void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
            // Loaded once, under the static's initialisation lock.
            const char *why = ::dlerror();  // NOLINT(concurrency-mt-unsafe)
            throw std::runtime_error("cannot load the git module " + path.string() + ": " +
                                     (why != nullptr ? why : "unknown error"));
        }
        using Entry = const tea_git_module *(*)();
        auto entry = reinterpret_cast<Entry>(::dlsym(handle, "tea_git_module_v1"));
        const tea_git_module *m = entry != nullptr ? entry() : nullptr;
        if (m == nullptr || m->abi != TEA_GIT_MODULE_ABI || m->call == nullptr ||
            m->release == nullptr) {
            throw std::runtime_error("the git module " + path.string() +
                                     " does not match this tea-evaluate (reinstall it)");
        }
        return m;
    }();
    return *loaded;
}

// One request; an error answer is raised as the exception the function documents.
json call(const char *operation, const json &request) {
    const auto &m = module();
    const auto text = request.dump();
    char *raw = nullptr;
    std::size_t length = 0;
    const int status = m.call(operation, text.data(), text.size(), &raw, &length);
    if (raw == nullptr) {
        throw std::runtime_error(std::string{"the git module gave no answer to "} + operation);
    }
    const std::unique_ptr<char, tea_git_free_fn> owned{raw, m.release};
    auto doc = json::parse(std::string_view{raw, length}, nullptr, false);
    if (doc.is_discarded()) {
        throw std::runtime_error(std::string{"the git module answered "} + operation +
                                 " with malformed JSON");
    }
    if (status == 0) {
        return doc;
    }
    const auto kind = doc.value("kind", std::string{"other"});
    const auto message = doc.contains("message") ? bytes::from_json(doc["message"], "message")
                                                 : std::string{"git module: unknown error"};
    if (kind == "missing_objects") {
        throw MissingObjectsError(
            doc.contains("commit") ? bytes::from_json(doc["commit"], "commit") : std::string{},
            message);
    }
    if (kind == "workspace_source") {
        throw WorkspaceSourceError(message);
    }
    if (kind == "private_repository") {
        throw PrivateRepositoryError(message);
    }
    throw std::runtime_error(message);
}

}  // namespace

WorkspaceSource open_workspace_source(const std::filesystem::path &project_root,
                                      const std::vector<std::string> &excluded,
                                      bool require_commit) {
    return wire::source_from_json(
        call("open_workspace_source", json{{"projectRoot", wire::path_to_json(project_root)},
                                           {"excluded", bytes::list_to_json(excluded)},
                                           {"requireCommit", require_commit}}));
}

Materialized materialize(const WorkspaceSource &source, const std::filesystem::path &destination) {
    return wire::materialized_from_json(call(
        "materialize",
        json{{"source", wire::to_json(source)}, {"destination", wire::path_to_json(destination)}}));
}

PrivateRepositoryResult build_private_repository(const PrivateRepositoryRequest &request,
                                                 const std::filesystem::path &cache_directory) {
    return wire::result_from_json(call(
        "build_private_repository", json{{"request", wire::to_json(request)},
                                         {"cacheDirectory", wire::path_to_json(cache_directory)}}));
}

void attach_in_place(const std::filesystem::path &work_tree,
                     const std::filesystem::path &private_repository) {
    (void)call("attach_in_place", json{{"workTree", wire::path_to_json(work_tree)},
                                       {"repository", wire::path_to_json(private_repository)}});
}

void attach_worktree(const std::filesystem::path &checkout_dir,
                     const std::filesystem::path &private_repository) {
    (void)call("attach_worktree", json{{"checkout", wire::path_to_json(checkout_dir)},
                                       {"repository", wire::path_to_json(private_repository)}});
}

}  // namespace tea::git
