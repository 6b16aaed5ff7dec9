// The git module's requests and answers as JSON (see module_abi.h): one encoding of each type,
// used by both sides of the boundary. Paths are byte strings (tea/json_bytes.hpp), so a name
// that is not UTF-8 survives the trip.
#pragma once

#include <nlohmann/json.hpp>

#include "git/patch_apply.hpp"
#include "git/private_repository.hpp"
#include "git/workspace_source.hpp"

namespace tea::git::wire {

nlohmann::json to_json(const WorkspaceSource &source);
WorkspaceSource source_from_json(const nlohmann::json &doc);

nlohmann::json to_json(const Materialized &result);
Materialized materialized_from_json(const nlohmann::json &doc);

nlohmann::json to_json(const PrivateRepositoryRequest &request);
PrivateRepositoryRequest request_from_json(const nlohmann::json &doc);

nlohmann::json to_json(const PrivateRepositoryResult &result);
PrivateRepositoryResult result_from_json(const nlohmann::json &doc);

nlohmann::json to_json(const std::vector<PatchedFile> &files);
std::vector<PatchedFile> patched_from_json(const nlohmann::json &doc);

nlohmann::json path_to_json(const std::filesystem::path &path);
std::filesystem::path path_from_json(const nlohmann::json &doc, std::string_view field);

}  // namespace tea::git::wire
