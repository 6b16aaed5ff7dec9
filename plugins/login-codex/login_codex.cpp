// The login adapter "codex": grants an entry that declares "login": "codex" the Codex CLI's
// login (codex_grant.cpp).
#include <tea/plugin.hpp>

#include "adapter.hpp"
#include "codex_grant.hpp"

namespace {

constexpr char name[] = "codex";
using CodexLogin = tea::login::Adapter<name, tea::login::codex_grant>;

}  // namespace

TEA_SDK_LOGIN_PLUGIN(CodexLogin, "codex", "1.0.0", TEA_ABI_1_7)
