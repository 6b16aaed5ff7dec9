# Sourced by the scripts that run an example with the real Claude Code CLI
# (run-claude-example.sh, run-agent-skill-example.sh), from the repository's root, with `script`
# set to the caller's name: finds the pinned CLI, builds tea-evaluate unless TEA_EVALUATE_BIN names
# one, and sets `claude` (the CLI), `claude_version` and `bin` (tea-evaluate). Exits 1, saying so,
# when the CLI is missing: an example never passes without running it.
repo=$PWD
umask 022
claude_version=$(sed -n 's/^claude_version=//p' scripts/install-deps.sh)
claude=${CLAUDE_BIN:-/var/cache/tea-evaluate-deps/claude-code-$claude_version/bin/claude}
if [ -z "${TEA_EVALUATE_BIN:-}" ]; then
  # install-deps leaves the CLI out when npm cannot reach the registry; the check below says so.
  bash scripts/install-deps.sh || true
  cmake --preset release >/dev/null
  cmake --build --preset release
  TEA_EVALUATE_BIN=$repo/build/release/bin/tea-evaluate
fi
if [ ! -x "$claude" ]; then
  echo "$script: no Claude Code CLI at $claude: scripts/install-deps.sh installs" \
    "@anthropic-ai/claude-code-linux-x64@$claude_version from npm (Linux x86-64 with glibc" \
    "only); it could not here, so nothing was evaluated" >&2
  exit 1
fi
bin=$TEA_EVALUATE_BIN
