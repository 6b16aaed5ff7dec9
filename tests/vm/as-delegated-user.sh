#!/bin/sh
# Runs COMMAND as USER the way a systemd host on cgroup2 runs a user's login shell: in a leaf of
# the cgroup systemd delegates to the user's manager (user@UID.service: the directory and its
# cgroup.procs, cgroup.subtree_control and cgroup.threads owned by the user, the memory and pids
# controllers enabled for it by its parents), beneath which the user may make cgroups of its own
# (delegated-scope.sh). Run as root in the guest (run-in-guest.sh).
#
#   as-delegated-user.sh USER COMMAND [ARG...]
set -eu
user=$1
shift
uid=$(id -u "$user")
gid=$(id -g "$user")
home=$(getent passwd "$user" | cut -d: -f6)
cg=/sys/fs/cgroup
slice=$cg/user.slice/user-$uid.slice
service=$slice/user@$uid.service
mkdir -p "$service"
for parent in "$cg" "$cg/user.slice" "$slice"; do
    echo "+memory +pids" >"$parent/cgroup.subtree_control"
done
chown "$uid:$gid" "$service" "$service/cgroup.procs" "$service/cgroup.subtree_control" \
    "$service/cgroup.threads"
as_user() {
    setpriv --reuid="$uid" --regid="$gid" --init-groups -- "$@"
}
# What the user's manager makes of its cgroup: its own leaf, and app.slice with the controllers
# for the scopes it starts, among them the one the login shell runs in.
as_user mkdir -p "$service/init.scope" "$service/app.slice/session-shell.scope"
as_user sh -c "echo '+memory +pids' >'$service/cgroup.subtree_control'"
as_user sh -c "echo '+memory +pids' >'$service/app.slice/cgroup.subtree_control'"
echo 0 >"$service/app.slice/session-shell.scope/cgroup.procs"
exec setpriv --reuid="$uid" --regid="$gid" --init-groups -- \
    env HOME="$home" USER="$user" LOGNAME="$user" "$@"
