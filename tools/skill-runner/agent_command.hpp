// What the skill runner starts: the agent CLI's command line for one non-interactive session, the
// short list of variables it is handed, and where it looks for skills in its home.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "options.hpp"

namespace tea::skill_runner {

// The CLI's name, found on PATH when --agent-bin is not given.
const char *agent_program(Agent agent);

// The folder of the home, relative to it, where the CLI looks for the user's skills.
const char *skills_dir(Agent agent);

// argv of the session, the prompt read from stdin:
//   claude: <bin> -p --output-format stream-json --verbose --max-turns N <agent args>
//   codex:  <bin> exec --json --skip-git-repo-check <agent args> -
// (codex has no turn limit of its own: its budget is --max-seconds alone.)
std::vector<std::string> agent_command_line(const Options &options, const std::string &program);

// Whether the agent is handed the variable `name`: the short list of docs/agent-evaluations.md.
bool agent_variable(Agent agent, std::string_view name);

// The entries of `from` ("NAME=VALUE") the agent is handed, in order. A certificate authority
// file named by a relative path (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE) is made absolute against
// `cwd`: a probe can bring the file into the workspace, whose path changes with every trial.
std::vector<std::string> agent_environment(Agent agent, const std::vector<std::string> &from,
                                           const std::string &cwd);

}  // namespace tea::skill_runner
