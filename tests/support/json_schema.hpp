// JSON Schema validation for tests, with python3-jsonschema (the validator of the records' and
// the plugin documents' schemas).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tea::test {

// Validates each (document, schema file) pair, writing them to a file in `scratch` first; returns
// what the validator said of each invalid one ("" when all are valid), one line per problem:
// "<index> <schema file name> <path> <message>". Throws std::runtime_error when the validator
// could not run.
std::string schema_problems(const std::vector<std::pair<nlohmann::json, std::string>> &pairs,
                            const std::string &scratch);

}  // namespace tea::test
