#!/usr/bin/env bash
# The main job: set up, build, and evaluate the quickstart example end to end (check, run, score)
# on the embedded default configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
# As root the runtime loads only plugins that no other user can write (docs/plugin-authoring.md):
# the build tree is made so whatever umask the caller has.
umask 022
bash scripts/install-deps.sh example
cmake --preset release >/dev/null
# Only what an installation ships (the runtime, its helpers, the plugins): the test suite is
# scripts/test.sh's to build. Ninja prints each step as it goes.
echo "building tea-evaluate and its plugins (build/release)..." >&2
cmake --build --preset release --target tea-shipped
bin="$PWD/build/release/bin/tea-evaluate"

# The example is a project of its own: a fresh git repository holding examples/quickstart, in a
# directory the sandbox identity can reach whatever directory this repository lives in. It is
# kept afterwards, so its records can be read (the path is printed at the end).
project=$(mktemp -d /tmp/tea-quickstart-XXXXXX)
chmod 755 "$project"
cp -R examples/quickstart/. "$project/"
rm -rf "$project/.tea/runs"
git -C "$project" init -q
git -C "$project" add -A
git -C "$project" -c user.name=tea-evaluate -c user.email=example@tea-evaluate.invalid \
  commit -q -m "quickstart"

"$bin" check "$project/.tea"
run_dir=$("$bin" --json run "$project/.tea" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["runDir"])')
"$bin" score "$run_dir"
"$bin" report "$run_dir"
echo "records: $run_dir (run.json, manifest.json, score.json, trials/; report.html to open in a browser)"
