#!/usr/bin/env bash
# Evaluates an agent skill with the real Claude Code CLI, confined and logged in, against the local
# mock of its model API (examples/agent-skill, docs/agent-evaluations.md): check, run and score.
# The skill target runs tea-skill-runner, which installs skills/release-notes in the agent's
# private home and runs one session on the probe's prompt; the scripted agent writes
# RELEASE_NOTES.md as the skill says, the evaluator compares it with the expected notes, and the
# session's transcript is kept as an artifact.
#
#   scripts/run-agent-skill-example.sh [DIR]
#
# DIR (default: a new directory under /tmp) receives the project, the mock's files and a home of
# its own; the records stay there. Exits 0 when the outcome is as described, 1 otherwise, and 1
# with a message naming the script that installs it when the CLI is missing: it never passes
# without running the CLI. TEA_EVALUATE_BIN set: that binary (and the tea-skill-runner beside
# it), without installing or building.
set -euo pipefail
cd "$(dirname "$0")/.."
script=run-agent-skill-example
# shellcheck source=scripts/claude-example-setup.sh
. scripts/claude-example-setup.sh

copy_example "${1:-}" agent-skill
expected=$project/.tea/evaluator/expected.md

# The mock under a made-up host name; its turns:
# the notes written as the skill says, then a last word.
python3 - "$mock/script.json" "$expected" <<'PY'
import json, sys
turns = [
    [{"type": "tool_use", "name": "Write",
      "input": {"file_path": "RELEASE_NOTES.md", "content": open(sys.argv[2]).read()}}],
    [{"type": "text", "text": "The release notes are written."}],
]
json.dump({"turns": turns}, open(sys.argv[1], "w"))
PY
start_mock

# This run's port and CLI in the entry and the probe, and the authority in the probe's files.
python3 - "$project/.tea" "$port" "$claude" "$mock/ca.pem" <<'PY'
import json, os, sys
tea, port, claude, ca = sys.argv[1:]
with open(tea + "/evaluation.json") as f:
    evaluation = json.load(f)
entry = evaluation["registry"][0]
entry["egress"][0]["port"] = int(port)
entry["systemPaths"] = [os.path.dirname(claude)]
with open(tea + "/evaluation.json", "w") as f:
    json.dump(evaluation, f, indent=2)
with open(tea + "/probes/session.json") as f:
    probe = json.load(f)
args = probe["args"]
args[args.index("--agent-bin") + 1] = claude
probe["files"]["test-ca.pem"] = open(ca).read()
with open(tea + "/probes/session.json", "w") as f:
    json.dump(probe, f, indent=2)
PY
git -C "$project" init -q
git -C "$project" add -A
git -C "$project" -c user.name=tea-evaluate -c user.email=example@tea-evaluate.invalid \
  commit -q -m "agent-skill"

use_made_up_token
check_run_score
artifacts=$run_dir/trials/1/artifacts/notes-skill

expect "run exits 0" test "$run_status" -eq 0
expect "score exits 0 (pass)" test "$score_status" -eq 0
expect "the notes the skill describes were collected" cmp -s "$artifacts/notes" "$expected"
expect "the session's transcript was collected, one JSON value a line" \
  python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$artifacts/transcript"
expect "the CLI listed the installed skill" grep -qF '"release-notes"' "$artifacts/transcript"
expect "the runner's exit is recorded" python3 -c '
import json, sys
call = json.load(open(sys.argv[1]))["trials"][0]["calls"][0]
sys.exit(call["skill"]["runnerExit"] != "done")' "$run_dir/run.json"
expect "the mock saw the token" grep -qF "Bearer $token" "$mock/requests.jsonl"
expect "no record holds the token" \
  bash -c '! grep -rqF -- "$1" "$2" "$3/run.stderr" "$3/score.stderr"' _ "$token" "$run_dir" "$work"
echo "records: $run_dir"
exit "$failed"
