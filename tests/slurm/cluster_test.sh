#!/usr/bin/env bash
# The single-node cluster of scripts/slurm-up.sh runs a job array whose tasks are confined,
# audited calls of this build's runtime on the node, and scripts/slurm-down.sh leaves nothing of
# it running or written. Each task tries to read the cluster's own munge key (outside the call's
# grants) and names the array's task it is: confined, the key is out of reach and the audit lists
# the attempt (exit 3 under --strict); the control, the same command as a plain task of the same
# array, reads it.
#
#   cluster_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "$build/slurm-test.XXXXXX")
cluster=$work/cluster
finish() {
  bash "$root/scripts/slurm-down.sh" "$cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap finish EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/out/*; do [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }; done
  exit 1
}

SLURM_CONF=$(bash "$root/scripts/slurm-up.sh" "$cluster") || fail "the cluster did not come up"
export SLURM_CONF
mkdir -p "$work/ws" "$work/out"
key=$cluster/munge/munge.key
# The probe prints the first bytes of the key when it can read it, and the task it runs in.
cat >"$work/ws/probe.sh" <<'PROBE'
#!/bin/sh
head -c 16 "$1" | od -An -tx1 | tr -d ' \n' | head -c 8
echo " task=$SLURM_ARRAY_TASK_ID"
PROBE
cat >"$work/task.sh" <<TASK
#!/bin/sh
# Task 1 is the control: unconfined. Every other task runs the probe as a confined call.
if [ "\$SLURM_ARRAY_TASK_ID" = 1 ]; then
  exec /bin/sh "$work/ws/probe.sh" "$key"
fi
exec "$build/bin/tea-evaluate" exec --strict --workspace "$work/ws" --env SLURM_ARRAY_TASK_ID \\
  -- /bin/sh "$work/ws/probe.sh" "$key"
TASK
chmod 0755 "$work/task.sh"

job=$(sbatch --parsable --array=1-4 --chdir="$work/ws" -o "$work/out/%a.out" -e "$work/out/%a.err" \
  "$work/task.sh") || fail "sbatch refused the array"
for _ in $(seq 1 600); do
  squeue -h -j "$job" 2>/dev/null | grep -q . || break
  sleep 0.1
done
squeue -h -j "$job" 2>/dev/null | grep -q . && fail "the array $job did not end in 60 s"

expected_key=$(head -c 16 "$key" | od -An -tx1 | tr -d ' \n' | head -c 8)
# The control read the key.
grep -qx "$expected_key task=1" "$work/out/1.out" || fail "the unconfined task did not read the key"
for task in 2 3 4; do
  out=$work/out/$task.out
  err=$work/out/$task.err
  grep -q "task=$task" "$out" || fail "task $task did not run its call"
  grep -q "$expected_key" "$out" && fail "confined task $task read the cluster's key"
  # Audited, and complete: the key was not there to open (--strict exits 3 otherwise).
  grep -Eq "audit \((ebpf|seccomp|strace)\): no path outside the grants" "$err" || fail "task $task was not audited"
done
codes=$(scontrol show job "$job" 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^ExitCode=/) print $i }')
[ "$(echo "$codes" | grep -c '^ExitCode=0:0$')" -eq 4 ] || fail "exit codes: $codes"

bash "$root/scripts/slurm-down.sh" "$cluster" || fail "slurm-down failed"
left=$(pgrep -f -- "$cluster" || true)
[ -z "$left" ] || fail "left running after slurm-down: $left"
[ ! -e "$cluster" ] || fail "slurm-down left $cluster"
echo "PASS: 3 confined, audited tasks could not read the key; the control read it"
