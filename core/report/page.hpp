// The frame every report page shares: the document, its style, its one script and the policy that
// lets the browser run nothing else; and the reading of record fields, whatever their type.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tea::report {

// The whole page around `body` (already HTML). The Content-Security-Policy allows the page's own
// script by its hash and nothing else: no script from record text would run even if some text
// escaped html_text, and nothing is fetched from anywhere.
std::string page(std::string_view title, std::string_view body);

// A record's field as the bytes it holds: a string, a byte string ({"base64": ...}) decoded, a
// number or boolean as its JSON text; "" for a missing field or null, and the JSON text of
// anything else. `j` may be anything (a torn record).
std::string field_text(const nlohmann::json &j, std::string_view key);
// A record's field when it is an array (or object), else an empty one.
const nlohmann::json &field_list(const nlohmann::json &j, std::string_view key);
// A record's number field, or `otherwise`.
double field_number(const nlohmann::json &j, std::string_view key, double otherwise);
// A byte string's bytes (a string or {"base64": ...}); the JSON text of anything else.
std::string value_text(const nlohmann::json &value);

// A coordinate or a duration for the page, with one decimal.
std::string decimal(double value);

}  // namespace tea::report
