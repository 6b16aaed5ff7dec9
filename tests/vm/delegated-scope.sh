#!/bin/sh
# Runs COMMAND alone in a new scope beneath the user's app.slice, a cgroup the user may manage:
# what `systemd-run --user --scope -p Delegate=yes COMMAND` does on a systemd host, for a guest
# without systemd (as-delegated-user.sh). The command replaces this script, so its process is the
# one that was started.
#
#   delegated-scope.sh COMMAND [ARG...]
set -eu
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
case "$own" in
*/user@*.service/*) ;;
*)
    echo "delegated-scope: this process's cgroup $own is not beneath a user's service" >&2
    exit 125
    ;;
esac
apps=/sys/fs/cgroup${own%%.service/*}.service/app.slice
scope=$apps/run-$$-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ').scope
mkdir "$scope"
echo 0 >"$scope/cgroup.procs"
exec "$@"
