#include "agent_command.hpp"

#include <algorithm>
#include <array>

namespace tea::skill_runner {
namespace {

// Every agent: where it lives and how it reaches the model. The agent's tools (a shell, an
// editor) run with what it is handed and the model may print any of it into the transcript, so
// the caller's other variables (an evaluation's secrets, a host's tokens) stay with the runner.
constexpr std::array<std::string_view, 15> kCommonVariables{
    "HOME", "PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM",
    // The egress route the runtime sets (core/call/session.cpp) and the authority its clients
    // are told to trust.
    "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
    "NODE_USE_ENV_PROXY", "NODE_EXTRA_CA_CERTS"};

// Claude Code: the credentials the claude login adapter grants or an entry names
// (plugins/login-claude), the model API's address, and the switches that keep the CLI from
// reaching anything but that API (tests/clients/README.md).
constexpr std::array<std::string_view, 10> kClaudeVariables{
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "DISABLE_AUTOUPDATER",
    "DISABLE_TELEMETRY",
    "DISABLE_ERROR_REPORTING",
    "BUN_ENABLE_CRASH_REPORTING",
    "CLAUDE_CODE_MAX_RETRIES"};

// Codex: the key the codex login adapter grants (plugins/login-codex), the API's address and the
// authority file its TLS stack reads.
constexpr std::array<std::string_view, 3> kCodexVariables{"OPENAI_API_KEY", "OPENAI_BASE_URL",
                                                          "SSL_CERT_FILE"};

template <std::size_t N>
bool listed(const std::array<std::string_view, N> &names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

const char *agent_program(Agent agent) {
    return agent == Agent::claude ? "claude" : "codex";
}

const char *skills_dir(Agent agent) {
    return agent == Agent::claude ? ".claude/skills" : ".codex/skills";
}

std::vector<std::string> agent_command_line(const Options &options, const std::string &program) {
    std::vector<std::string> argv{program};
    if (options.agent == Agent::claude) {
        argv.insert(argv.end(), {"-p", "--output-format", "stream-json", "--verbose", "--max-turns",
                                 std::to_string(options.max_turns)});
        argv.insert(argv.end(), options.agent_args.begin(), options.agent_args.end());
    } else {
        argv.insert(argv.end(), {"exec", "--json", "--skip-git-repo-check"});
        argv.insert(argv.end(), options.agent_args.begin(), options.agent_args.end());
        argv.emplace_back("-");  // the prompt from stdin
    }
    return argv;
}

bool agent_variable(Agent agent, std::string_view name) {
    if (listed(kCommonVariables, name) || name.substr(0, 3) == "LC_") {
        return true;
    }
    return agent == Agent::claude ? listed(kClaudeVariables, name) : listed(kCodexVariables, name);
}

std::vector<std::string> agent_environment(Agent agent, const std::vector<std::string> &from,
                                           const std::string &cwd) {
    std::vector<std::string> kept;
    for (const auto &entry : from) {
        const auto equals = entry.find('=');
        if (equals == std::string::npos || equals == 0) {
            continue;
        }
        const std::string_view name = std::string_view{entry}.substr(0, equals);
        if (!agent_variable(agent, name)) {
            continue;
        }
        const std::string_view value = std::string_view{entry}.substr(equals + 1);
        if ((name == "NODE_EXTRA_CA_CERTS" || name == "SSL_CERT_FILE") && !value.empty() &&
            value.front() != '/') {
            kept.push_back(std::string{name} + "=" + cwd + "/" + std::string{value});
        } else {
            kept.push_back(entry);
        }
    }
    return kept;
}

}  // namespace tea::skill_runner
