#!/usr/bin/env bash
# Starts a single-node Slurm cluster of this machine in a folder of its own, without systemd: a
# munge daemon with a key made for it, slurmctld and slurmd, on ports the system had free, with
# nothing written outside the folder. Used by the tests and benchmarks of the Slurm executor
# (docs/scale-out.md); scripts/slurm-down.sh stops it and removes the folder.
#
#   slurm-up.sh DIR
#
# Prints the cluster's configuration file's path when the node is idle and takes jobs; a client
# uses it through SLURM_CONF. Needs root (slurmd runs jobs as their submitter), slurm-wlm and
# munge (scripts/install-deps.sh installs both). Exit status 1 when the cluster does not come up,
# with the daemons' logs, and nothing left running.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "slurm-up: slurmd runs jobs as their users: run as root" >&2; exit 1; }
for program in munged slurmctld slurmd scontrol sinfo; do
  command -v "$program" >/dev/null || {
    echo "slurm-up: $program is missing: run scripts/install-deps.sh" >&2
    exit 1
  }
done
mkdir -p "$1"
dir=$(cd "$1" && pwd)
case "$dir" in
*[!A-Za-z0-9/._-]*)
  # slurm.conf has no quoting: a path with a space or a '#' would be read as something else.
  echo "slurm-up: $dir holds a character slurm.conf cannot carry; use a plain path" >&2
  exit 1
  ;;
esac
mkdir -p "$dir/munge" "$dir/ctld" "$dir/d" "$dir/log"
chmod 0700 "$dir/munge"

# Ports nothing listens on now, one for each daemon: two clusters on one machine do not meet.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ctld_port=$(free_port)
d_port=$(free_port)
while [ "$d_port" = "$ctld_port" ]; do d_port=$(free_port); done
node=$(hostname -s)
cpus=$(nproc)
memory=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 / 2))

# The cluster's own key: its credentials are good for this cluster and nothing else.
head -c 1024 /dev/urandom >"$dir/munge/munge.key"
chmod 0400 "$dir/munge/munge.key"
socket=$dir/munge/munge.socket

cat >"$dir/slurm.conf" <<EOF
ClusterName=tea
SlurmctldHost=$node
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/d
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MaxArraySize=100001
MinJobAge=300
NodeName=$node CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=tea Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
# Three minutes: a run's node check fits, its array does not (the tests of the pending limit).
PartitionName=short Nodes=$node MaxTime=3 State=UP OverSubscribe=FORCE:4
EOF
# slurmd reads a cgroup.conf beside slurm.conf when there is one; none is made, so none is used.

stop_all() {
  for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    if [ -s "$pid_file" ]; then kill "$(cat "$pid_file")" 2>/dev/null || true; fi
  done
}
fail() {
  echo "slurm-up: $*" >&2
  for log in "$dir"/log/*.log; do
    [ -f "$log" ] && { echo "--- $log" >&2; tail -n 20 "$log" >&2; }
  done
  stop_all
  exit 1
}

munged --socket="$socket" --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
  --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" --force ||
  fail "munged did not start"
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start"

for _ in $(seq 1 100); do
  state=$(sinfo -h -n "$node" -o %T 2>/dev/null || true)
  case "$state" in
  idle | mixed | allocated) echo "$SLURM_CONF"; exit 0 ;;
  esac
  sleep 0.1
done
fail "the node $node is not idle after 10 s (sinfo says: ${state:-nothing})"
