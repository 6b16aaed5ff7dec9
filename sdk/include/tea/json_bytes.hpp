// Byte strings in JSON documents, for code that uses nlohmann/json (the
// runtime and its in-tree plugins; optional for other plugins). A byte string
// is a plain JSON string when it is valid UTF-8 and {"base64": "..."} otherwise.
#ifndef TEA_JSON_BYTES_HPP
#define TEA_JSON_BYTES_HPP

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tea/bytes.hpp>
#include <vector>

namespace tea::bytes {

inline nlohmann::json to_json(std::string_view bytes) {
    if (is_valid_utf8(bytes)) {
        return std::string{bytes};
    }
    return nlohmann::json{{"base64", base64_encode(bytes)}};
}

// Throws std::invalid_argument naming `field` when the value is neither form.
inline std::string from_json(const nlohmann::json &value, std::string_view field) {
    if (value.is_string()) {
        return value.get<std::string>();
    }
    if (value.is_object() && value.size() == 1 && value.contains("base64") &&
        value["base64"].is_string()) {
        if (auto decoded = base64_decode(value["base64"].get<std::string>())) {
            return *decoded;
        }
    }
    throw std::invalid_argument(std::string{field} +
                                ": expected a string or {\"base64\": \"...\"} with valid base64");
}

inline nlohmann::json list_to_json(const std::vector<std::string> &list) {
    auto out = nlohmann::json::array();
    for (const auto &item : list) {
        out.push_back(to_json(item));
    }
    return out;
}

inline std::vector<std::string> list_from_json(const nlohmann::json &value,
                                               std::string_view field) {
    if (!value.is_array()) {
        throw std::invalid_argument(std::string{field} + ": expected an array");
    }
    std::vector<std::string> out;
    out.reserve(value.size());
    for (std::size_t i = 0; i < value.size(); ++i) {
        out.push_back(from_json(value[i], std::string{field} + "[" + std::to_string(i) + "]"));
    }
    return out;
}

}  // namespace tea::bytes

#endif  // TEA_JSON_BYTES_HPP
