// What the login "codex" grants an entry: the Codex CLI's login file and, when the entry names it,
// its API key (docs/logins.md).
#pragma once

#include <tea/login_documents.hpp>

namespace tea::login {

// Throws tea::sdk::Unavailable for a confined entry on a host that has neither route, and
// tea::sdk::Invalid for a login file the host must not link.
documents::LoginGrant codex_grant(const documents::LoginRequest &request);

}  // namespace tea::login
