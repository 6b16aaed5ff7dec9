#!/bin/sh
# Passes when the file the agent was asked to write holds the expected text. That text lies in the
# evaluation folder, which the agent cannot read.
set -eu
written="$TEA_TRIAL_DIR/artifacts/agent/written"
if [ -f "$written" ] && cmp -s "$written" "$TEA_EVALUATION_DIR/evaluator/expected.txt"; then
  echo '{"verdict": "pass", "reasons": ["the agent wrote the expected file"]}'
else
  echo '{"verdict": "fail", "reasons": ["the agent did not write the expected file"]}'
fi
