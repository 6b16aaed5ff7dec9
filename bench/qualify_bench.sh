#!/usr/bin/env bash
# qualify of the quickstart with five mutations (seven arms) against seven `tea-evaluate run`s of
# the same project one after another, and qualify --jobs 2 (two arms at once, each a process of
# its own): the wall clock of each, medians of ROUNDS interleaved rounds. The targets (issue 36):
# qualify takes no more than the sum of its arms plus 5 %; --jobs 2 writes the same records.
# Usage: bash bench/qualify_bench.sh [ROUNDS]   (from the repository's root, after a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
bin="$PWD/build/release/bin/tea-evaluate"
base=$(mktemp -d /tmp/tea-qualify-bench-XXXXXX)
trap 'rm -rf "$base"' EXIT
chmod 755 "$base"
project="$base/project"
mkdir "$project"
cp -R examples/quickstart/. "$project/"
rm -rf "$project/.tea/runs"
# Three more mutations beside the example's two: a patch, and two replacement trees.
mutations="$project/.tea/mutations"
sed 's/wc -l/wc -c/g' "$mutations/count-lines.patch" >"$mutations/count-bytes.patch"
mkdir -p "$mutations/report-empty/bin" "$mutations/extra-file/bin"
sed 's/printf .file=%s words=%s\\n. "\$2" "\$words" >out\/report.txt/: >out\/report.txt/' \
  "$project/bin/wordcount" >"$mutations/report-empty/bin/wordcount"
chmod 755 "$mutations/report-empty/bin/wordcount"
printf '#!/bin/sh\necho extra\n' >"$mutations/extra-file/bin/extra"
chmod 755 "$mutations/extra-file/bin/extra"
git -C "$project" init -q
git -C "$project" add -A
git -C "$project" -c user.name=bench -c user.email=bench@tea-evaluate.invalid commit -q -m bench
export TEA_EVALUATE_PRIVATE_ROOT="$base/private" XDG_CONFIG_HOME=/nonexistent-tea-bench

# shellcheck source=bench/timing.sh
source bench/timing.sh  # the scripts run from the repository root

# What the arms found, once: the score of the five mutations.
"$bin" -q qualify "$project/.tea" 2>&1 | grep 'mutation score' || true

qualify_times=() runs_times=() jobs_times=()
for ((r = 1; r <= rounds; ++r)); do
  qualify_times+=("$(seconds "$bin" -q qualify "$project/.tea")")
  runs_times+=("$(seconds bash -c "for i in 1 2 3 4 5 6 7; do '$bin' -q run '$project/.tea' || true; done")")
  jobs_times+=("$(seconds "$bin" -q qualify "$project/.tea" --jobs 2)")
done
q=$(printf '%s\n' "${qualify_times[@]}" | median)
s=$(printf '%s\n' "${runs_times[@]}" | median)
j=$(printf '%s\n' "${jobs_times[@]}" | median)
echo "qualify, 7 arms:  ${q} s (rounds: ${qualify_times[*]})"
echo "7 runs in a row:  ${s} s (rounds: ${runs_times[*]})"
echo "qualify --jobs 2: ${j} s (rounds: ${jobs_times[*]})"
echo "ratio qualify / runs: $(echo "scale=3; $q / $s" | bc)"
echo "ratio --jobs 2 / --jobs 1: $(echo "scale=3; $j / $q" | bc)"

# The verdicts of the last --jobs 1 and --jobs 2 qualifications, which must agree.
for jobs in 1 2; do
  "$bin" -q --json qualify "$project/.tea" --jobs "$jobs" 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("--jobs '"$jobs"':", r["verdict"], r["mutationScore"], [a["verdict"] for a in r["arms"]])' || true
done
