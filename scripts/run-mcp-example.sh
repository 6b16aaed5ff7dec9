#!/usr/bin/env bash
# examples/mcp-filesystem end to end: the pinned MCP filesystem server as a confined toolServer
# entry (check, run, score). Its listing of the workspace meets its expect; its reads of
# /etc/shadow and of the evaluation folder fail, the latter listed by the audit, so run and score
# exit 3. With --opt-out the same evaluation runs under "confinement": false and reads both.
set -euo pipefail
cd "$(dirname "$0")/.."
umask 022
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
bin="$PWD/build/release/bin/tea-evaluate"

# A project of its own, kept for its records; the probe that reads the evaluation folder is given
# that folder's path, which only this copy knows.
project=$(mktemp -d /tmp/tea-mcp-filesystem-XXXXXX)
chmod 755 "$project"
cp -R examples/mcp-filesystem/. "$project/"
rm -rf "$project/.tea/runs"
sed -i "s|@EVALUATION@|$project/.tea|" "$project/.tea/probes/03-evaluation.json"
if [ "${1:-}" = "--opt-out" ]; then
  sed -i 's|"confinement": true|"confinement": false|' "$project/.tea/evaluation.json"
fi
git -C "$project" init -q
git -C "$project" add -A
git -C "$project" -c user.name=tea-evaluate -c user.email=example@tea-evaluate.invalid \
  commit -q -m "mcp-filesystem"

"$bin" check "$project/.tea"
status=0
run_dir=$("$bin" --json run "$project/.tea" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["runDir"])') || status=$?
[ -n "$run_dir" ] || exit "$status"
"$bin" score "$run_dir" || status=$?
echo "records: $run_dir (trials/1/calls/*.json hold each probe's exchanges)"
exit "$status"
