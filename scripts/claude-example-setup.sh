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

# Copies examples/NAME into $project under `work` (the first argument of the caller, or a new
# directory under /tmp), beside $mock (the mock's files, with a certificate authority made for
# this run) and a home; the sandbox identity must reach the project when this runs as root.
copy_example() {
  work=${1:-$(mktemp -d "/tmp/tea-$2-XXXXXX")}
  mkdir -p "$work"
  chmod 755 "$work"
  project=$work/project
  mock=$work/mock
  mkdir -p "$project" "$mock" "$work/home"
  cp -R "examples/$2/." "$project/"
  rm -rf "$project/.tea/runs"
  sh tests/clients/make_test_pki.sh "$mock" api.mock.test
}

# Starts the mock with $mock/script.json, stopped when the caller exits; sets `port`, its API's.
start_mock() {
  python3 -I tests/clients/messages_api_mock.py --host api.mock.test --script "$mock/script.json" \
    --log "$mock/requests.jsonl" --cert "$mock/server.pem" --key "$mock/server.key" \
    --ports "$mock/ports.json" &
  mock_pid=$!
  trap 'kill "$mock_pid" 2>/dev/null || true' EXIT
  for _ in $(seq 100); do [ -f "$mock/ports.json" ] && break; sleep 0.1; done
  port=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["api"])' "$mock/ports.json")
}

# The token route, with a made-up token (the mock takes any) in `token`, in a home of the
# example's own (under $work), the CLI pointed at the mock on `port` with the authority the
# probe brings into the workspace.
use_made_up_token() {
  token="sk-ant-oat01-example-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
  export HOME=$work/home CLAUDE_CONFIG_DIR= CLAUDE_CODE_OAUTH_TOKEN=$token
  export ANTHROPIC_BASE_URL=https://api.mock.test:$port NODE_EXTRA_CA_CERTS=test-ca.pem
  # What keeps the CLI from reaching anything but the mock (tests/clients/claude_cli.hpp).
  export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
    DISABLE_ERROR_REPORTING=1 BUN_ENABLE_CRASH_REPORTING=0 CLAUDE_CODE_MAX_RETRIES=0
}

# check, run and score of $project/.tea, what they print on stderr kept under $work: sets
# run_status, run_dir and score_status; exits 1 when run made no run.
check_run_score() {
  "$bin" check "$project/.tea"
  set +e
  "$bin" --json run "$project/.tea" >"$work/run.json" 2>"$work/run.stderr"
  run_status=$?
  set -e
  cat "$work/run.stderr" >&2
  run_dir=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("runDir", ""))' \
    "$work/run.json" 2>/dev/null || true)
  if [ -z "$run_dir" ]; then
    echo "$script: tea-evaluate run exited $run_status and made no run" >&2
    exit 1
  fi
  set +e
  "$bin" score "$run_dir" 2>"$work/score.stderr"
  score_status=$?
  set -e
  cat "$work/score.stderr" >&2
}

failed=0
expect() {  # expect WHAT COMMAND...: says whether the outcome holds
  if "${@:2}"; then echo "ok: $1"; else echo "NOT AS EXPECTED: $1" >&2; failed=1; fi
}
