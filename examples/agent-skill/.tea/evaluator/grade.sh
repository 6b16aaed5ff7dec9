#!/bin/sh
# Passes when the skill's session wrote the release notes the skill describes, and its transcript
# was kept. The expected notes lie in the evaluation folder, which the agent cannot read.
set -eu
artifacts="$TEA_TRIAL_DIR/artifacts/notes-skill"
if [ ! -s "$artifacts/transcript" ]; then
  echo '{"verdict": "fail", "reasons": ["the session left no transcript"]}'
elif [ -f "$artifacts/notes" ] && cmp -s "$artifacts/notes" "$TEA_EVALUATION_DIR/evaluator/expected.md"; then
  echo '{"verdict": "pass", "reasons": ["the agent wrote the release notes the skill describes"]}'
else
  echo '{"verdict": "fail", "reasons": ["RELEASE_NOTES.md is missing or not as the skill describes"]}'
fi
