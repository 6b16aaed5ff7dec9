#!/usr/bin/env bash
# run of the quickstart with 16 trials, one at a time (--jobs 1) against two at once (--jobs 2,
# each trial a task of its own), and bare: the same calls' targets and evaluator run directly,
# one trial after another, with no confinement, no audit and no evaluator. Wall clock, medians of ROUNDS
# interleaved rounds. Issue 40 compares --jobs 2 with the Slurm executor's 16 trials.
# Usage: bash bench/run_jobs_bench.sh [ROUNDS]   (from the repository's root, after a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
trials=16
bin="$PWD/build/release/bin/tea-evaluate"
base=$(mktemp -d /var/tmp/tea-run-jobs-bench-XXXXXX)
trap 'rm -rf "$base"' EXIT
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

seconds() { # the wall clock of a command, in seconds
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || true
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
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

: >"$base/one" && : >"$base/two" && : >"$base/bare"
for round in $(seq 1 "$rounds"); do
  seconds "$bin" -q run "$project/.tea" --jobs 1 >>"$base/one"
  seconds "$bin" -q run "$project/.tea" --jobs 2 >>"$base/two"
  seconds bare >>"$base/bare"
  echo "round $round: --jobs 1 $(tail -1 "$base/one") s, --jobs 2 $(tail -1 "$base/two") s, bare $(tail -1 "$base/bare") s"
done
one=$(median <"$base/one")
two=$(median <"$base/two")
echo "medians of $rounds rounds, $trials trials: --jobs 1 $one s, --jobs 2 $two s ($(echo "scale=2; $two / $one" | bc)x), bare $(median <"$base/bare") s"
