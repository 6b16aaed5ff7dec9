#include "redaction/credentials_strings.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tea::redaction {

namespace {

bool long_enough(std::string_view s) {
    return s.size() >= kMinimumSecretBytes;
}

bool spelled_like_field_name(std::string_view key) {
    if (key.empty() || (key[0] >= '0' && key[0] <= '9')) return false;
    return std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
    });
}

// The strings of a valid JSON text, read as events so that no tree is built and no depth of
// nesting costs stack.
class StringCollector final : public nlohmann::json_sax<nlohmann::json> {
   public:
    StringCollector(const std::vector<std::string> &non_secret_fields,
                    std::vector<std::string> &out)
        : non_secret_(non_secret_fields), out_(out) {}

    bool null() override { return scalar(); }
    bool boolean(bool /*value*/) override { return scalar(); }
    bool number_integer(number_integer_t /*value*/) override { return scalar(); }
    bool number_unsigned(number_unsigned_t /*value*/) override { return scalar(); }
    bool number_float(number_float_t /*value*/, const string_t & /*text*/) override {
        return scalar();
    }
    bool binary(binary_t & /*value*/) override { return scalar(); }
    bool string(string_t &value) override {
        if (!skip_next_ && skipping_from_ == 0 && long_enough(value)) out_.push_back(value);
        return scalar();
    }
    bool key(string_t &name) override {
        if (skipping_from_ != 0) return true;
        if (!spelled_like_field_name(name) && long_enough(name)) out_.push_back(name);
        skip_next_ = std::find(non_secret_.begin(), non_secret_.end(), name) != non_secret_.end();
        return true;
    }
    bool start_object(std::size_t /*elements*/) override { return open(); }
    bool start_array(std::size_t /*elements*/) override { return open(); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t /*position*/, const std::string & /*last_token*/,
                     const nlohmann::detail::exception & /*error*/) override {
        return false;
    }

   private:
    bool scalar() {
        skip_next_ = false;
        return true;
    }
    bool open() {
        ++depth_;
        if (skip_next_ && skipping_from_ == 0) skipping_from_ = depth_;
        skip_next_ = false;
        return true;
    }
    bool close() {
        if (skipping_from_ == depth_) skipping_from_ = 0;
        --depth_;
        return true;
    }

    const std::vector<std::string> &non_secret_;
    std::vector<std::string> &out_;
    bool skip_next_ = false;         // the next value is a field that is no secret
    std::size_t depth_ = 0;          // containers open
    std::size_t skipping_from_ = 0;  // the depth of the container being skipped, or 0
};

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

void add_whitespace_tokens(std::string_view text, std::vector<std::string> &out) {
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && is_space(text[i])) ++i;
        const std::size_t begin = i;
        while (i < text.size() && !is_space(text[i])) ++i;
        if (long_enough(text.substr(begin, i - begin))) {
            out.emplace_back(text.substr(begin, i - begin));
        }
    }
}

void add_quoted_strings(std::string_view text, std::vector<std::string> &out) {
    std::size_t i = 0;
    while ((i = text.find('"', i)) != std::string_view::npos) {
        const std::size_t begin = ++i;
        while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2U : 1U;
        const std::size_t end = std::min(i, text.size());
        const auto raw = text.substr(begin, end - begin);
        if (long_enough(raw)) out.emplace_back(raw);
        if (raw.find('\\') != std::string_view::npos) {
            std::string quoted;
            quoted.reserve(raw.size() + 2);
            quoted.append(1, '"').append(raw).append(1, '"');
            const auto value = nlohmann::json::parse(quoted, nullptr, false);
            if (value.is_string() && long_enough(value.get_ref<const std::string &>())) {
                out.push_back(value.get<std::string>());
            }
        }
        ++i;  // past the closing quote
    }
}

}  // namespace

CredentialsStrings credentials_strings(std::string_view text,
                                       const std::vector<std::string> &non_secret_fields) {
    CredentialsStrings result;
    StringCollector collector(non_secret_fields, result.strings);
    if (nlohmann::json::sax_parse(text, &collector)) return result;
    result.torn = true;
    result.strings.clear();
    if (long_enough(text)) result.strings.emplace_back(text);
    add_whitespace_tokens(text, result.strings);
    add_quoted_strings(text, result.strings);
    return result;
}

}  // namespace tea::redaction
