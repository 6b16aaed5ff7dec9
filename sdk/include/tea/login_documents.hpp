// The documents of a login adapter's `grant` (ABI 1.7), as C++ types with their JSON codecs: the
// request (host -> adapter) names one registry entry that declares a login and what the host
// knows of the invoker; the grant (adapter -> host) says which of the invoker's variables pass,
// which files are linked read-only into each private home and where, which fields of those files
// are not secret, and further strings to redact. docs/logins.md describes the route of each;
// docs/schema/login-{request,grant}.schema.json state the same shapes as JSON Schema.
//
// Optional and header-only, like tea/documents.hpp (whose conventions it shares: strict decoding
// of what a plugin answers, unknown fields of a request ignored, byte strings as JSON strings or
// {"base64": ...}).
#ifndef TEA_LOGIN_DOCUMENTS_HPP
#define TEA_LOGIN_DOCUMENTS_HPP

#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tea/documents.hpp>
#include <tea/json_bytes.hpp>
#include <vector>

namespace tea::documents {

// grant's request.
struct LoginRequest {
    std::string entry;                          // the registry entry's interface id
    std::string login;                          // the login it declares, the adapter's name
    std::string executable;                     // the entry's executable, as written
    std::string home;                           // the invoker's real home (byte string)
    std::vector<std::string> env;               // the invoker's environment, "NAME=value"
    std::vector<std::string> environment_keys;  // the entry's environmentKeys
    bool confined = true;                       // false for a run that opts out of confinement
};

// A file of the invoker's that holds a login.
struct LoginFile {
    std::string source;                      // its absolute path on the host
    std::string home_path;                   // where each private home links it, relative
    std::vector<std::string> public_fields;  // top-level fields of its JSON that are no secret
};

// grant's answer.
struct LoginGrant {
    std::vector<std::string> variables;  // names of the invoker's variables that pass
    std::vector<LoginFile> files;
    std::vector<std::string> redact;  // further strings to redact wherever a target prints them
};

// The value of NAME in an environment list ("NAME=value" entries), or nothing.
inline std::optional<std::string> env_lookup(const std::vector<std::string> &env,
                                             std::string_view name) {
    for (const auto &entry : env) {
        if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
            entry[name.size()] == '=') {
            return entry.substr(name.size() + 1);
        }
    }
    return std::nullopt;
}

namespace detail {

inline bool is_variable_name(std::string_view name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) {
        return false;
    }
    for (const char c : name) {
        const bool ok =
            (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) {
            return false;
        }
    }
    return true;
}

inline std::string text_field(const nlohmann::json &doc, const std::string &prefix,
                              const char *name) {
    const auto &value = field(doc, prefix, name);
    if (!value.is_string()) {
        fail(prefix + name + ": expected a string");
    }
    return value.get<std::string>();
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Request codec
// ---------------------------------------------------------------------------------------------

inline std::string encode(const LoginRequest &request) {
    return nlohmann::json{{"entry", request.entry},
                          {"login", request.login},
                          {"executable", bytes::to_json(request.executable)},
                          {"home", bytes::to_json(request.home)},
                          {"env", bytes::list_to_json(request.env)},
                          {"environmentKeys", request.environment_keys},
                          {"confined", request.confined}}
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

inline LoginRequest decode_login_request(std::string_view text) {
    using detail::byte_string;
    using detail::byte_strings;
    using detail::field;
    const auto doc = detail::parse_object(text, "the login request");
    LoginRequest request;
    request.entry = detail::text_field(doc, "", "entry");
    request.login = detail::text_field(doc, "", "login");
    request.executable = byte_string(field(doc, "", "executable"), "executable");
    request.home = byte_string(field(doc, "", "home"), "home");
    request.env = byte_strings(field(doc, "", "env"), "env");
    const auto &keys = field(doc, "", "environmentKeys");
    if (!keys.is_array()) {
        detail::fail("environmentKeys: expected an array");
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (!keys[i].is_string()) {
            detail::fail("environmentKeys[" + std::to_string(i) + "]: expected a string");
        }
        request.environment_keys.push_back(keys[i].get<std::string>());
    }
    const auto &confined = field(doc, "", "confined");
    if (!confined.is_boolean()) {
        detail::fail("confined: expected true or false");
    }
    request.confined = confined.get<bool>();
    return request;
}

// ---------------------------------------------------------------------------------------------
// Grant codec
// ---------------------------------------------------------------------------------------------

inline std::string encode(const LoginGrant &grant) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto &f : grant.files) {
        files.push_back({{"source", bytes::to_json(f.source)},
                         {"homePath", f.home_path},
                         {"publicFields", f.public_fields}});
    }
    return nlohmann::json{{"variables", grant.variables},
                          {"files", std::move(files)},
                          {"redact", bytes::list_to_json(grant.redact)}}
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

// Strict: what an adapter answers decides what reaches a confined target, so anything the host
// would have to guess at is refused, naming the field.
inline LoginGrant decode_login_grant(std::string_view text) {
    using detail::fail;
    using detail::field;
    const auto doc = detail::parse_object(text, "the login grant");
    detail::only_known(doc, std::array<const char *, 3>{"variables", "files", "redact"}, "", "");
    LoginGrant grant;
    const auto &variables = field(doc, "", "variables");
    if (!variables.is_array()) {
        fail("variables: expected an array");
    }
    for (std::size_t i = 0; i < variables.size(); ++i) {
        const auto where = "variables[" + std::to_string(i) + "]";
        // A name with '=' or a NUL would let an adapter smuggle a value of its choosing past the
        // host's environment list.
        if (!variables[i].is_string() ||
            !detail::is_variable_name(variables[i].get<std::string>())) {
            fail(where + ": expected a variable name ([A-Za-z_][A-Za-z0-9_]*)");
        }
        grant.variables.push_back(variables[i].get<std::string>());
    }
    const auto &files = field(doc, "", "files");
    if (!files.is_array()) {
        fail("files: expected an array");
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
        const auto &f = files[i];
        const auto where = "files[" + std::to_string(i) + "]";
        if (!f.is_object()) {
            fail(where + R"(: expected {"source", "homePath", "publicFields"})");
        }
        detail::only_known(f, std::array<const char *, 3>{"source", "homePath", "publicFields"},
                           where + ".", "");
        LoginFile file;
        file.source = detail::byte_string(field(f, where + ".", "source"), where + ".source");
        detail::no_nul(file.source, where + ".source");
        if (file.source.empty() || file.source.front() != '/') {
            fail(where + ".source: expected an absolute path");
        }
        file.home_path = detail::text_field(f, where + ".", "homePath");
        if (!detail::is_home_relative(file.home_path)) {
            fail(where +
                 ".homePath: expected a path inside the home (relative, without '.', "
                 "'..' or empty components)");
        }
        const auto &fields = field(f, where + ".", "publicFields");
        if (!fields.is_array()) {
            fail(where + ".publicFields: expected an array");
        }
        for (std::size_t j = 0; j < fields.size(); ++j) {
            if (!fields[j].is_string()) {
                fail(where + ".publicFields[" + std::to_string(j) + "]: expected a string");
            }
            file.public_fields.push_back(fields[j].get<std::string>());
        }
        for (const auto &other : grant.files) {
            // Two files at one place in the home: which one the target reads would depend on
            // the order the host links them in.
            if (other.home_path == file.home_path) {
                fail(where + ".homePath: " + file.home_path + " is named twice");
            }
        }
        grant.files.push_back(std::move(file));
    }
    grant.redact = detail::byte_strings(field(doc, "", "redact"), "redact");
    return grant;
}

}  // namespace tea::documents

#endif  // TEA_LOGIN_DOCUMENTS_HPP
