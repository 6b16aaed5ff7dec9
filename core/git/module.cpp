// The git module (module_abi.h): the runtime's git work, with libgit2, behind a JSON boundary.
#include <cstdlib>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tea/json_bytes.hpp>

#include "git/module_abi.h"
#include "git/wire.hpp"

namespace {

using nlohmann::json;
namespace wire = tea::git::wire;

json run(std::string_view operation, const json &request) {
    if (operation == "open_workspace_source") {
        std::vector<std::string> excluded =
            tea::bytes::list_from_json(request.at("excluded"), "excluded");
        const auto &require_commit = request.at("requireCommit");
        if (!require_commit.is_boolean()) {
            throw std::invalid_argument("git module: requireCommit is not a boolean");
        }
        return wire::to_json(tea::git::open_workspace_source(
            wire::path_from_json(request.at("projectRoot"), "projectRoot"), excluded,
            require_commit.get<bool>()));
    }
    if (operation == "materialize") {
        return wire::to_json(
            tea::git::materialize(wire::source_from_json(request.at("source")),
                                  wire::path_from_json(request.at("destination"), "destination")));
    }
    if (operation == "build_private_repository") {
        return wire::to_json(tea::git::build_private_repository(
            wire::request_from_json(request.at("request")),
            wire::path_from_json(request.at("cacheDirectory"), "cacheDirectory")));
    }
    if (operation == "attach_in_place") {
        tea::git::attach_in_place(wire::path_from_json(request.at("workTree"), "workTree"),
                                  wire::path_from_json(request.at("repository"), "repository"));
        return json::object();
    }
    if (operation == "attach_worktree") {
        tea::git::attach_worktree(wire::path_from_json(request.at("checkout"), "checkout"),
                                  wire::path_from_json(request.at("repository"), "repository"));
        return json::object();
    }
    throw std::invalid_argument("git module: unknown operation " + std::string{operation});
}

// The answer, copied into memory the caller releases with tea_git_free.
int answer(const std::string &text, int status, char **out, std::size_t *out_length) {
    // NOLINTNEXTLINE(cppcoreguidelines-owning-memory,cppcoreguidelines-no-malloc): C boundary
    auto *copy = static_cast<char *>(std::malloc(text.size() + 1));
    if (copy == nullptr) {
        *out = nullptr;
        *out_length = 0;
        return 1;
    }
    std::memcpy(copy, text.data(), text.size());
    copy[text.size()] = '\0';
    *out = copy;
    *out_length = text.size();
    return status;
}

int call(const char *operation, const char *request, std::size_t request_length, char **out,
         std::size_t *out_length) {
    std::string kind = "other";
    std::string message;
    std::string commit;
    try {
        const auto doc = json::parse(std::string_view{request, request_length});
        return answer(run(operation, doc).dump(), 0, out, out_length);
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
        return answer(json{{"kind", kind},
                           {"message", tea::bytes::to_json(message)},
                           {"commit", tea::bytes::to_json(commit)}}
                          .dump(),
                      1, out, out_length);
    } catch (...) {
        return answer(R"({"kind":"other","message":"git module: out of memory"})", 1, out,
                      out_length);
    }
}

void release(char *answer) {
    std::free(answer);  // NOLINT(cppcoreguidelines-owning-memory,cppcoreguidelines-no-malloc)
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const tea_git_module *tea_git_module_v1() {
    static const tea_git_module module{TEA_GIT_MODULE_ABI, &call, &release};
    return &module;
}
