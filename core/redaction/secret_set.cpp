#include "redaction/secret_set.hpp"

#include <nlohmann/json.hpp>

#include "redaction/credentials_file.hpp"
#include "redaction/credentials_strings.hpp"
#include "util/error.hpp"

namespace tea::redaction {

namespace {

// How a JSON writer spells `secret` inside a string, without the quotes.
std::string json_spelling(const std::string &secret, bool ensure_ascii) {
    const auto quoted = nlohmann::json(secret).dump(-1, ' ', ensure_ascii,
                                                    nlohmann::json::error_handler_t::replace);
    return quoted.substr(1, quoted.size() - 2);
}

}  // namespace

SecretSet::Added SecretSet::add_value(std::string_view value, const std::string &source) {
    if (value.empty()) return {};
    return add_all({std::string{value}}, source);
}

SecretSet::Added SecretSet::add_credentials(std::string_view text,
                                            const std::vector<std::string> &non_secret_fields,
                                            const std::string &source) {
    const auto found = credentials_strings(text, non_secret_fields);
    Added added = add_all(found.strings, source);
    added.torn = found.torn;
    return added;
}

SecretSet::Added SecretSet::add_from_file(int fd, const std::string &name,
                                          const std::vector<std::string> &non_secret_fields) {
    return add_credentials(read_credentials_file(fd, name), non_secret_fields, name);
}

SecretSet::Added SecretSet::add_all(const std::vector<std::string> &strings,
                                    const std::string &source) {
    std::vector<std::string> fresh;
    std::unordered_set<std::string> seen;
    std::size_t fresh_bytes = 0;
    auto consider = [&](std::string s) {
        if (s.empty() || known_.count(s) != 0 || seen.count(s) != 0) return;
        fresh_bytes += s.size();
        seen.insert(s);
        fresh.push_back(std::move(s));
    };
    for (const auto &s : strings) {
        consider(s);
        consider(json_spelling(s, false));
        consider(json_spelling(s, true));
    }
    if (bytes_ + fresh_bytes > kMaxSecretBytes) {
        // Fail closed: a run that cannot keep a secret would print it.
        throw host_error("the secrets to redact from " + source + " would take " +
                         std::to_string(bytes_ + fresh_bytes) + " bytes, more than the " +
                         std::to_string(kMaxSecretBytes) + " a run keeps");
    }
    for (auto &s : fresh) {
        known_.insert(s);
        secrets_.push_back(std::move(s));
    }
    bytes_ += fresh_bytes;
    if (!fresh.empty()) matcher_.reset();
    return {fresh.size(), false};
}

std::shared_ptr<const SecretMatcher> SecretSet::matcher() const {
    if (!matcher_) matcher_ = std::make_shared<const SecretMatcher>(secrets_);
    return matcher_;
}

}  // namespace tea::redaction
