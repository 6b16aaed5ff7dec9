// tea-evaluate's side of the git module (module_abi.h): the functions of workspace_source.hpp and
// private_repository.hpp, each a request to lib/tea-evaluate/libtea-git.so, loaded on first use
// through the plugins' loader.
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tea/json_bytes.hpp>

#include "git/module_abi.h"
#include "git/wire.hpp"
#include "plugins/host_services.hpp"
#include "plugins/library.hpp"
#include "util/runtime_paths.hpp"

namespace tea::git {
namespace {

using nlohmann::json;

struct Module {
    const tea_git_module *operations = nullptr;
    const tea_host_services *host = nullptr;
};

const Module &module() {
    static const Module loaded = [] {
        // From the runtime's own installation only, as the plugins are: a module found on a
        // search path could be anyone's.
        const auto path = RuntimePaths::detect().prefix / TEA_GIT_MODULE;
        void *entry = nullptr;
        try {
            entry = plugins::load_library(path, TEA_GIT_MODULE_ENTRY_SYMBOL,
                                          plugins::TrustPolicy::for_this_process());
        } catch (const std::exception &e) {
            throw std::runtime_error(std::string{"cannot load the git module: "} + e.what());
        }
        const tea_git_module *m =
            entry != nullptr ? reinterpret_cast<tea_git_module_entry_fn>(entry)() : nullptr;
        if (!TEA_HAS_MEMBER(tea_git_module, m, apply_patch) || m->abi != TEA_GIT_MODULE_ABI ||
            m->open_workspace_source == nullptr || m->materialize == nullptr ||
            m->build_private_repository == nullptr || m->attach_in_place == nullptr ||
            m->attach_worktree == nullptr || m->apply_patch == nullptr) {
            throw std::runtime_error("the git module " + path.string() +
                                     " does not match this tea-evaluate (reinstall it)");
        }
        return Module{m, plugins::host_services_for("git module")};
    }();
    return loaded;
}

// One request; an error answer is raised as the exception the function documents.
json call(tea_git_operation_fn tea_git_module::*operation, const char *name, const json &request) {
    const auto &m = module();
    const auto text = request.dump();
    tea_buffer answer;
    // The runtime's own module, not a plugin: its answers (a partial clone's missing objects)
    // are as long as they need to be.
    answer.limit = std::numeric_limits<std::size_t>::max();
    const int32_t status =
        (m.operations->*operation)(m.host, tea_str{text.data(), text.size()}, &answer);
    auto doc = json::parse(answer.data, nullptr, false);
    if (doc.is_discarded()) {
        throw std::runtime_error(std::string{"the git module answered "} + name +
                                 (answer.data.empty() ? " with nothing" : " with malformed JSON"));
    }
    if (status == TEA_OK) {
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
    return wire::source_from_json(call(&tea_git_module::open_workspace_source,
                                       "open_workspace_source",
                                       json{{"projectRoot", wire::path_to_json(project_root)},
                                            {"excluded", bytes::list_to_json(excluded)},
                                            {"requireCommit", require_commit}}));
}

Materialized materialize(const WorkspaceSource &source, const std::filesystem::path &destination) {
    return wire::materialized_from_json(call(
        &tea_git_module::materialize, "materialize",
        json{{"source", wire::to_json(source)}, {"destination", wire::path_to_json(destination)}}));
}

PrivateRepositoryResult build_private_repository(const PrivateRepositoryRequest &request,
                                                 const std::filesystem::path &cache_directory) {
    return wire::result_from_json(
        call(&tea_git_module::build_private_repository, "build_private_repository",
             json{{"request", wire::to_json(request)},
                  {"cacheDirectory", wire::path_to_json(cache_directory)}}));
}

void attach_in_place(const std::filesystem::path &work_tree,
                     const std::filesystem::path &private_repository) {
    (void)call(&tea_git_module::attach_in_place, "attach_in_place",
               json{{"workTree", wire::path_to_json(work_tree)},
                    {"repository", wire::path_to_json(private_repository)}});
}

void attach_worktree(const std::filesystem::path &checkout_dir,
                     const std::filesystem::path &private_repository) {
    (void)call(&tea_git_module::attach_worktree, "attach_worktree",
               json{{"checkout", wire::path_to_json(checkout_dir)},
                    {"repository", wire::path_to_json(private_repository)}});
}

std::vector<PatchedFile> apply_patch(const WorkspaceSource &source, const std::string &patch) {
    return wire::patched_from_json(
        call(&tea_git_module::apply_patch, "apply_patch",
             json{{"source", wire::to_json(source)}, {"patch", bytes::to_json(patch)}}));
}

}  // namespace tea::git
