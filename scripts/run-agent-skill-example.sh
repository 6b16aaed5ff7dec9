#!/usr/bin/env bash
# Evaluates an agent skill with the real Claude Code CLI, confined and logged in, against the local
# mock of its model API (examples/agent-skill, docs/agent-evaluations.md): check, run and score.
# The skill target runs tea-skill-runner, which installs skills/release-notes in the agent's
# private home and runs one session on the probe's prompt; the scripted agent writes
# RELEASE_NOTES.md as the skill says, and the session's transcript is kept as an artifact. The
# rubric judge (the same CLI, outside the confinement, with no tools) scores the notes against
# .tea/rubric.md: its first answer is malformed and sent back, its second passes the trial. A
# second run with a token the mock refuses shows a missing login: the runner exits 4, the trial
# is an infrastructure error, and score says Invalid (3), never a fail.
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

# The mock under a made-up host name. The agent's turns (requests that offer tools): the notes
# written as the skill says, then a last word. The judge's (requests that offer none): scores in
# prose, which the runtime sends back, then the answer in the schema it asked for.
python3 - "$mock/script.json" "$expected" <<'PY'
import json, sys
turns = [
    [{"type": "tool_use", "name": "Write",
      "input": {"file_path": "RELEASE_NOTES.md", "content": open(sys.argv[2]).read()}}],
    [{"type": "text", "text": "The release notes are written."}],
]
answer = {"criteria": [
    {"id": "follows-the-skill", "score": 5, "reason": "heading, blank line, one bullet a change"},
    {"id": "lists-every-change", "score": 5, "reason": "both changes, worded as in CHANGES.txt"}]}
plain_turns = [
    [{"type": "text", "text": "Both criteria are met: 5 and 5."}],
    [{"type": "text", "text": json.dumps(answer)}],
]
json.dump({"turns": turns, "plainTurns": plain_turns}, open(sys.argv[1], "w"))
PY
start_mock
# The mock's certificate authority where both the confined agent (a system path of its entry)
# and the judge (outside, in a working directory of its own) read it by the same absolute name.
mkdir -p "$work/ca"
cp "$mock/ca.pem" "$work/ca/ca.pem"
chmod 755 "$work/ca"
chmod 644 "$work/ca/ca.pem"

# This run's port and CLI in the entry and the probe, and the authority in the probe's files.
python3 - "$project/.tea" "$port" "$claude" "$work/ca" <<'PY'
import json, os, sys
tea, port, claude, ca_dir = sys.argv[1:]
with open(tea + "/evaluation.json") as f:
    evaluation = json.load(f)
entry = evaluation["registry"][0]
entry["egress"][0]["port"] = int(port)
evaluation["evaluator"]["egress"][0]["port"] = int(port)
entry["systemPaths"] = [os.path.dirname(claude), ca_dir]
evaluation["evaluator"]["program"] = claude
with open(tea + "/evaluation.json", "w") as f:
    json.dump(evaluation, f, indent=2)
with open(tea + "/probes/session.json") as f:
    probe = json.load(f)
args = probe["args"]
args[args.index("--agent-bin") + 1] = claude
with open(tea + "/probes/session.json", "w") as f:
    json.dump(probe, f, indent=2)
PY
git -C "$project" init -q
git -C "$project" add -A
git -C "$project" -c user.name=tea-evaluate -c user.email=example@tea-evaluate.invalid \
  commit -q -m "agent-skill"

use_made_up_token
# The agent and the judge each reach the mock through an egress route of their own.
export NODE_EXTRA_CA_CERTS=$work/ca/ca.pem
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
expect "the judge's first answer was sent back and its second passed the trial" python3 -c '
import json, sys
verdict = json.load(open(sys.argv[1]))
turns = verdict["judge"]["turns"]
sys.exit(not (verdict["verdict"] == "pass" and len(turns) == 2 and not turns[0]["accepted"]
              and turns[1]["accepted"]))' "$run_dir/trials/1/verdict.json"
expect "the mock saw the token" grep -qF "Bearer $token" "$mock/requests.jsonl"
expect "the judge's route carried it: the judge record lists its host, the mock's proxy no tunnel" \
  python3 -c '
import json, sys
verdict = json.load(open(sys.argv[1]))
tunnels = [l for l in open(sys.argv[2]) if json.loads(l).get("kind") == "connect"]
sys.exit(verdict["judge"]["egress"][0]["host"] != "api.mock.test" or len(tunnels) > 0)' \
  "$run_dir/trials/1/verdict.json" "$mock/requests.jsonl"
expect "no record holds the token" \
  bash -c '! grep -rqF -- "$1" "$2" "$3/run.stderr" "$3/score.stderr"' _ "$token" "$run_dir" "$work"
passed_run=$run_dir

# A login the model API refuses: the mock now takes only a token this run does not hold.
python3 - "$mock/script.json" <<'PY'
import json, sys
script = json.load(open(sys.argv[1]))
script["acceptedCredentials"] = ["Bearer sk-ant-oat01-not-this-run"]
json.dump(script, open(sys.argv[1], "w"))
PY
kill "$mock_pid" 2>/dev/null || true
wait "$mock_pid" 2>/dev/null || true
rm -f "$mock/ports.json"
start_mock
python3 - "$project/.tea/evaluation.json" "$port" <<'PY'
import json, sys
evaluation = json.load(open(sys.argv[1]))
evaluation["registry"][0]["egress"][0]["port"] = int(sys.argv[2])
evaluation["evaluator"]["egress"][0]["port"] = int(sys.argv[2])
json.dump(evaluation, open(sys.argv[1], "w"), indent=2)
PY
git -C "$project" -c user.name=tea-evaluate -c user.email=example@tea-evaluate.invalid \
  commit -q -am "agent-skill: the mock's new port"
export ANTHROPIC_BASE_URL=https://api.mock.test:$port
check_run_score
expect "run ends as usual (0): no path outside the grants, the verdict is score's" \
  test "$run_status" -eq 0
expect "score says Invalid (3), not a fail" test "$score_status" -eq 3
expect "the runner's exit 4 is recorded as an infrastructure error" python3 -c '
import json, sys
call = json.load(open(sys.argv[1]))["trials"][0]["calls"][0]
sys.exit(not (call["status"] == 4 and call["infrastructureError"]
              and call["skill"]["runnerExit"] == "the agent could not authenticate"))' \
  "$run_dir/run.json"
echo "records: $passed_run (passed), $run_dir (no login)"
exit "$failed"
