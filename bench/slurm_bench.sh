#!/usr/bin/env bash
# The raw mechanism under the Slurm executor (docs/scale-out.md), in interleaved rounds on a
# single-node cluster of this machine (scripts/slurm-up.sh): the cluster's start, one `srun true`,
# and a job array of eight `true` tasks from `sbatch` to its end (polled with `squeue`), against
# eight bare `true`s. Prints each round and the medians. As root.
#
#   bench/slurm_bench.sh [ROUNDS]
set -euo pipefail
rounds=${1:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /var/tmp/tea-slurm-bench.XXXXXX)
trap 'bash "$root/scripts/slurm-down.sh" "$work/cluster" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$2"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

t0=$(now)
SLURM_CONF=$(bash "$root/scripts/slurm-up.sh" "$work/cluster")
t1=$(now)
export SLURM_CONF
echo "cluster up: $(elapsed "$t0" "$t1") s"
: >"$work/srun" && : >"$work/array" && : >"$work/bare"
for round in $(seq 1 "$rounds"); do
  a=$(now); srun true; b=$(now)
  elapsed "$a" "$b" >>"$work/srun"
  a=$(now)
  job=$(sbatch --parsable --array=1-8 -o /dev/null --wrap=true)
  while squeue -h -j "$job" 2>/dev/null | grep -q .; do sleep 0.02; done
  b=$(now)
  elapsed "$a" "$b" >>"$work/array"
  a=$(now); for _ in 1 2 3 4 5 6 7 8; do /bin/true; done; b=$(now)
  elapsed "$a" "$b" >>"$work/bare"
  echo "round $round: srun true $(tail -1 "$work/srun") s, array of 8 $(tail -1 "$work/array") s, 8 bare $(tail -1 "$work/bare") s"
done
echo "medians: srun true $(median <"$work/srun") s, array of 8 $(median <"$work/array") s, 8 bare $(median <"$work/bare") s"
