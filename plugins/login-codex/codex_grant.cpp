#include "codex_grant.hpp"

#include <algorithm>
#include <string>

#include "credential_file.hpp"

namespace tea::login {

namespace {

constexpr const char *key_variable = "OPENAI_API_KEY";
constexpr const char *home_path = ".codex/auth.json";

}  // namespace

documents::LoginGrant codex_grant(const documents::LoginRequest &request) {
    documents::LoginGrant grant;
    // The API key is a credential of the invoker's account: it passes only when the entry
    // asks for it by name.
    const bool named = std::find(request.environment_keys.begin(), request.environment_keys.end(),
                                 key_variable) != request.environment_keys.end();
    if (const auto key = documents::env_lookup(request.env, key_variable);
        named && key && !key->empty()) {
        grant.variables.emplace_back(key_variable);
        grant.redact.push_back(*key);
    }
    // Where the Codex CLI keeps its login: CODEX_HOME, else ~/.codex.
    const auto codex_home = documents::env_lookup(request.env, "CODEX_HOME");
    const std::string file = codex_home && !codex_home->empty()
                                 ? under(*codex_home, "auth.json")
                                 : under(under(request.home, ".codex"), "auth.json");
    if (credentials_file_present(file)) {
        // Every field of auth.json may carry a credential (tokens, the key, the account id).
        grant.files.push_back({file, home_path, {}});
    }
    if (request.confined && grant.variables.empty() && grant.files.empty()) {
        throw tea::sdk::Unavailable(
            "login 'codex' finds neither a login file at " + (file.empty() ? "~/.codex" : file) +
            " nor " + key_variable +
            " named in the entry's environmentKeys and set: log in with `codex login` on this "
            "host, name " +
            key_variable +
            " in environmentKeys and export it, or run the evaluation unconfined "
            "(\"confinement\": false in evaluation.json)");
    }
    return grant;
}

}  // namespace tea::login
