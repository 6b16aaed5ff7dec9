#include "claude_grant.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "credential_file.hpp"

namespace tea::login {

namespace {

constexpr const char *token_variable = "CLAUDE_CODE_OAUTH_TOKEN";
constexpr const char *home_path = ".claude/.credentials.json";

// Credentials an entry may pass by naming them in environmentKeys: passed by the entry's own
// grant, and redacted here like the login's, since they are as secret.
constexpr std::array<const char *, 3> named_credentials{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                                                        "CLAUDE_CODE_OAUTH_TOKEN"};

}  // namespace

documents::LoginGrant claude_grant(const documents::LoginRequest &request) {
    documents::LoginGrant grant;
    const auto token = documents::env_lookup(request.env, token_variable);
    if (token && !token->empty()) {
        grant.variables.emplace_back(token_variable);
        grant.redact.push_back(*token);
    }
    for (const char *name : named_credentials) {
        const bool named =
            std::find(request.environment_keys.begin(), request.environment_keys.end(), name) !=
            request.environment_keys.end();
        if (const auto value = documents::env_lookup(request.env, name);
            named && value && !value->empty() &&
            std::find(grant.redact.begin(), grant.redact.end(), *value) == grant.redact.end()) {
            grant.redact.push_back(*value);
        }
    }
    // Where Claude Code on Linux keeps its login: CLAUDE_CONFIG_DIR, else ~/.claude.
    const auto config_dir = documents::env_lookup(request.env, "CLAUDE_CONFIG_DIR");
    const std::string file = config_dir && !config_dir->empty()
                                 ? under(*config_dir, ".credentials.json")
                                 : under(under(request.home, ".claude"), ".credentials.json");
    if (credentials_file_present(file)) {
        // The fields Claude Code's file documents as no secret: their values stay in records.
        grant.files.push_back({file, home_path, {"scopes", "subscriptionType", "rateLimitTier"}});
    }
    if (request.confined && grant.variables.empty() && grant.files.empty()) {
        throw tea::sdk::Unavailable(
            "login 'claude' finds neither " + std::string{token_variable} +
            " in the environment nor a login file at " + (file.empty() ? "~/.claude" : file) +
            ": export a token from `claude setup-token` as " + token_variable +
            ", log in with `claude` on this host, or run the evaluation unconfined "
            "(\"confinement\": false in evaluation.json)");
    }
    return grant;
}

}  // namespace tea::login
