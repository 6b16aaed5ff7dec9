// The login adapter "claude": grants an entry that declares "login": "claude" Claude Code's
// login (claude_grant.cpp).
#include <tea/plugin.hpp>

#include "adapter.hpp"
#include "claude_grant.hpp"

namespace {

constexpr char name[] = "claude";
using ClaudeLogin = tea::login::Adapter<name, tea::login::claude_grant>;

}  // namespace

TEA_SDK_LOGIN_PLUGIN(ClaudeLogin, "claude", "1.0.0", TEA_ABI_1_7)
