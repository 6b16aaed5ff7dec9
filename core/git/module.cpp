// The git module (module_abi.h): the runtime's git work, with libgit2, behind a JSON boundary.
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tea/json_bytes.hpp>
#include <vector>

#include "git/module_abi.h"
#include "git/wire.hpp"

namespace {

using nlohmann::json;
namespace wire = tea::git::wire;

bool append(const tea_host_services *host, tea_buffer *answer, const std::string &text) {
    return TEA_HAS_MEMBER(tea_host_services, host, buffer_append) &&
           host->buffer_append != nullptr &&
           host->buffer_append(answer, tea_str{text.data(), text.size()}) == TEA_OK;
}

// Parses the request, runs `run` on it and appends its answer, or the error document: nothing
// thrown leaves the module.
template <class Run>
int32_t serve(const tea_host_services *host, tea_str request, tea_buffer *answer,
              Run run) noexcept {
    std::string kind = "other";
    std::string message;
    std::string commit;
    try {
        const auto doc = json::parse(std::string_view{request.data, request.size});
        return append(host, answer, run(doc).dump()) ? TEA_OK : TEA_FAILED;
    } catch (const tea::git::MissingObjectsError &e) {
        kind = "missing_objects";
        message = e.what();
        commit = e.commit();
    } catch (const tea::git::WorkspaceSourceError &e) {
        kind = "workspace_source";
        message = e.what();
    } catch (const tea::git::PrivateRepositoryError &e) {
        kind = "private_repository";
        message = e.what();
    } catch (const std::exception &e) {
        message = e.what();
    } catch (...) {
        message = "git module: unknown error";
    }
    try {
        (void)append(host, answer,
                     json{{"kind", kind},
                          {"message", tea::bytes::to_json(message)},
                          {"commit", tea::bytes::to_json(commit)}}
                         .dump());
    } catch (...) {
        (void)append(host, answer, R"({"kind":"other","message":"git module: out of memory"})");
    }
    return TEA_FAILED;
}

int32_t open_workspace_source(const tea_host_services *host, tea_str request,
                              tea_buffer *answer) noexcept {
    return serve(host, request, answer, [](const json &r) {
        std::vector<std::string> excluded =
            tea::bytes::list_from_json(r.at("excluded"), "excluded");
        const auto &require_commit = r.at("requireCommit");
        if (!require_commit.is_boolean()) {
            throw std::invalid_argument("git module: requireCommit is not a boolean");
        }
        return wire::to_json(tea::git::open_workspace_source(
            wire::path_from_json(r.at("projectRoot"), "projectRoot"), excluded,
            require_commit.get<bool>()));
    });
}

int32_t materialize(const tea_host_services *host, tea_str request, tea_buffer *answer) noexcept {
    return serve(host, request, answer, [](const json &r) {
        return wire::to_json(
            tea::git::materialize(wire::source_from_json(r.at("source")),
                                  wire::path_from_json(r.at("destination"), "destination")));
    });
}

int32_t build_private_repository(const tea_host_services *host, tea_str request,
                                 tea_buffer *answer) noexcept {
    return serve(host, request, answer, [](const json &r) {
        return wire::to_json(tea::git::build_private_repository(
            wire::request_from_json(r.at("request")),
            wire::path_from_json(r.at("cacheDirectory"), "cacheDirectory")));
    });
}

int32_t attach_in_place(const tea_host_services *host, tea_str request,
                        tea_buffer *answer) noexcept {
    return serve(host, request, answer, [](const json &r) {
        tea::git::attach_in_place(wire::path_from_json(r.at("workTree"), "workTree"),
                                  wire::path_from_json(r.at("repository"), "repository"));
        return json::object();
    });
}

int32_t attach_worktree(const tea_host_services *host, tea_str request,
                        tea_buffer *answer) noexcept {
    return serve(host, request, answer, [](const json &r) {
        tea::git::attach_worktree(wire::path_from_json(r.at("checkout"), "checkout"),
                                  wire::path_from_json(r.at("repository"), "repository"));
        return json::object();
    });
}

int32_t apply_patch(const tea_host_services *host, tea_str request, tea_buffer *answer) noexcept {
    return serve(host, request, answer, [](const json &r) {
        return wire::to_json(tea::git::apply_patch(wire::source_from_json(r.at("source")),
                                                   tea::bytes::from_json(r.at("patch"), "patch")));
    });
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const tea_git_module *tea_git_module_entry() {
    static const tea_git_module module{
        sizeof(tea_git_module),    TEA_GIT_MODULE_ABI, &open_workspace_source, &materialize,
        &build_private_repository, &attach_in_place,   &attach_worktree,       &apply_patch};
    return &module;
}
