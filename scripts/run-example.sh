#!/usr/bin/env bash
# The main job: set up, build, and run the example on the embedded default
# configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
exec build/release/bin/tea-evaluate exec -- sh -c 'echo "hello from a confined call: uid=$(id -u) cwd=$PWD"; ls /'
