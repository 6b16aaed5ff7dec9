#!/usr/bin/env bash
# Stops the cluster scripts/slurm-up.sh started in DIR (its jobs first) and removes DIR.
#
#   slurm-down.sh DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
[ -f "$dir/slurm.conf" ] || { echo "slurm-down: $dir holds no cluster of slurm-up.sh" >&2; exit 1; }
export SLURM_CONF=$dir/slurm.conf
scancel --full --quiet --user=root 2>/dev/null || true
# The daemons, by the pid files they wrote, told at once and each waited for, so that the folder
# is no one's after.
pids=()
for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
  pid=$(cat "$pid_file" 2>/dev/null) || continue
  # A daemon removes its pid file as it ends: the pid is read before it is told.
  if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then pids+=("$pid"); fi
done
for pid in "${pids[@]+"${pids[@]}"}"; do
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null || true
done
rm -rf "$dir"
