#!/usr/bin/env bash
# run of the quickstart with 16 trials, one at a time (--jobs 1) against two at once (--jobs 2,
# each trial a task of its own), against the same through a single-node Slurm cluster of this
# machine (--executor slurm --jobs 2, scripts/slurm-up.sh; as root, when slurm-wlm is installed),
# and bare: the same calls' targets run directly, one trial after another, with no confinement,
# no audit and no evaluator. Wall clock, medians of ROUNDS interleaved rounds (issue 40).
# Usage: bash bench/run_jobs_bench.sh [ROUNDS]   (from the repository's root, after a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
trials=16
bin="$PWD/build/release/bin/tea-evaluate"
base=$(mktemp -d /var/tmp/tea-run-jobs-bench-XXXXXX)
trap 'bash scripts/slurm-down.sh "$base/cluster" >/dev/null 2>&1 || true; rm -rf "$base"' EXIT
chmod 755 "$base"
project="$base/project"
mkdir "$project"
cp -R examples/quickstart/. "$project/"
rm -rf "$project/.tea/runs"
sed -i "s/\"trials\": 2/\"trials\": $trials/" "$project/.tea/evaluation.json"
git -C "$project" init -q
git -C "$project" add -A
git -C "$project" -c user.name=bench -c user.email=bench@tea-evaluate.invalid commit -q -m bench
export TEA_EVALUATE_PRIVATE_ROOT="$base/private" XDG_CONFIG_HOME=/nonexistent-tea-bench

# shellcheck source=bench/timing.sh
source bench/timing.sh  # the scripts run from the repository root
# The quickstart's three probes and its evaluator, bare, for each trial.
bare() {
  local w
  for _ in $(seq 1 "$trials"); do
    w=$(mktemp -d "$base/bare-XXXXXX")
    cp -R "$project/bin" "$project/README.md" "$w/"
    (cd "$w" && bin/wordcount count README.md && printf "a b c\n" | bin/wordcount count - &&
      bin/wordcount report README.md) >/dev/null
    rm -rf "$w"
  done
}

slurm=false
if command -v slurmctld >/dev/null && [ "$(id -u)" -eq 0 ]; then
  SLURM_CONF=$(bash scripts/slurm-up.sh "$base/cluster")
  export SLURM_CONF
  slurm=true
fi
: >"$base/one" && : >"$base/two" && : >"$base/slurm" && : >"$base/bare"
for round in $(seq 1 "$rounds"); do
  seconds "$bin" -q run "$project/.tea" --jobs 1 >>"$base/one"
  seconds "$bin" -q run "$project/.tea" --jobs 2 >>"$base/two"
  if $slurm; then
    seconds "$bin" -q run "$project/.tea" --executor slurm --jobs 2 >>"$base/slurm"
  fi
  seconds bare >>"$base/bare"
  echo "round $round: --jobs 1 $(tail -1 "$base/one") s, --jobs 2 $(tail -1 "$base/two") s," \
    "slurm --jobs 2 $(tail -1 "$base/slurm" 2>/dev/null) s, bare $(tail -1 "$base/bare") s"
done
one=$(median <"$base/one")
two=$(median <"$base/two")
echo "medians of $rounds rounds, $trials trials: --jobs 1 $one s, --jobs 2 $two s" \
  "($(echo "scale=2; $two / $one" | bc)x), bare $(median <"$base/bare") s"
if $slurm; then
  through=$(median <"$base/slurm")
  echo "through Slurm, --jobs 2: $through s ($(echo "scale=2; $through / $two" | bc)x of local" \
    "--jobs 2; $(echo "scale=3; ($through - $two) / $trials" | bc) s more per trial)"
fi
