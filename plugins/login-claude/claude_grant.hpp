// What the login "claude" grants an entry: Claude Code's own two routes, and nothing else of
// the invoker's home (docs/logins.md).
#pragma once

#include <tea/login_documents.hpp>

namespace tea::login {

// Throws tea::sdk::Unavailable for a confined entry on a host that has neither route, and
// tea::sdk::Invalid for a login file the host must not link.
documents::LoginGrant claude_grant(const documents::LoginRequest &request);

}  // namespace tea::login
