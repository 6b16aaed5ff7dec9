// Redacting a record (a JSON document) value by value, so it stays valid JSON: every string, every
// object key, and the bytes of every {"base64": ...} byte string (tea/json_bytes.hpp) pass through
// the matcher; numbers, booleans and null are no secrets.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "redaction/secret_matcher.hpp"

namespace tea::redaction {

// `text` with every occurrence of the matcher's secrets replaced by the marker.
std::string redact_text(const SecretMatcher &matcher, std::string_view text);

// `doc` with every string, key and byte string redacted. Two keys of an object that redact alike
// both stay, the later ones numbered ("[redacted]#2"), rather than one replacing the other. A
// byte string whose base64 does not decode is replaced whole.
nlohmann::json redact_json(const SecretMatcher &matcher, const nlohmann::json &doc);

}  // namespace tea::redaction
