#!/usr/bin/env bash
# The main job: set up, build, and run the example on the embedded default
# configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
# A fresh workspace the sandbox identity can reach, whatever directory the
# repository lives in.
workspace=$(mktemp -d /tmp/tea-example-XXXXXX)
trap 'rm -rf "$workspace"' EXIT
cp -R examples/hello/. "$workspace/"
chmod 755 "$workspace"
build/release/bin/tea-evaluate exec --workspace "$workspace" --withhold "$workspace/secret" \
  -- sh probe.sh
