#include "redaction/json_redactor.hpp"

#include <tea/json_bytes.hpp>

#include "redaction/stream_redactor.hpp"

namespace tea::redaction {

std::string redact_text(const SecretMatcher &matcher, std::string_view text) {
    StringSink sink;
    StreamRedactor redactor{matcher, sink};
    redactor.write(text);
    redactor.finish();
    return std::move(sink.text);
}

nlohmann::json redact_json(const SecretMatcher &matcher, const nlohmann::json &doc) {
    if (doc.is_string()) {
        return redact_text(matcher, doc.get_ref<const std::string &>());
    }
    // A byte string that is not UTF-8 travels as {"base64": ...}: its bytes are what a reader
    // decodes, so they are what is redacted (a secret in a path with a stray byte stays out).
    if (doc.is_object() && doc.size() == 1 && doc.contains("base64") && doc["base64"].is_string()) {
        try {
            return bytes::to_json(redact_text(matcher, bytes::from_json(doc, "base64")));
        } catch (const std::exception &) {
            return std::string{kRedactedMarker};  // undecodable: nothing of it is kept
        }
    }
    if (doc.is_array()) {
        auto out = nlohmann::json::array();
        for (const auto &item : doc) {
            out.push_back(redact_json(matcher, item));
        }
        return out;
    }
    if (doc.is_object()) {
        auto out = nlohmann::json::object();
        for (const auto &[key, value] : doc.items()) {
            const auto redacted = redact_text(matcher, key);
            auto name = redacted;
            for (int n = 2; out.contains(name); ++n) {
                name = redacted + "#" + std::to_string(n);
            }
            out[name] = redact_json(matcher, value);
        }
        return out;
    }
    return doc;
}

}  // namespace tea::redaction
