# shellcheck shell=dash
# The guest's system, set up the way a systemd host on cgroup2 has it, then the job run-in-guest.sh
# left in /run/tea-vm: run as root in a login session's scope, its status written back to
# /run/tea-vm/status, and the guest powered off. Run by busybox sh as the guest's PID 1.
bb=/run/tea-vm-bin/busybox
job=/run/tea-vm
say() {
    echo "tea-vm: $*" >/dev/console
}
power_off() {
    sync
    exec $bb poweroff -f
}
must() {
    "$@" || {
        say "guest set-up failed: $*"
        power_off
    }
}

must $bb mount -t proc -o nosuid,nodev,noexec proc /proc
must $bb mount -t sysfs -o nosuid,nodev,noexec sys /sys
must $bb mount -t devtmpfs -o nosuid dev /dev
$bb mkdir -p /dev/pts /dev/shm
must $bb mount -t devpts -o nosuid,noexec,newinstance,ptmxmode=0666,mode=620 devpts /dev/pts
must $bb mount -t tmpfs -o nosuid,nodev,mode=1777 shm /dev/shm
for dir in /tmp /var/tmp; do
    must $bb mount -t tmpfs -o nosuid,nodev,mode=1777 tmp "$dir"
done
# Homes of their own: nothing of the host's users' state is seen.
must $bb mount -t tmpfs -o nosuid,nodev,mode=755 home /home
must $bb mount -t tmpfs -o nosuid,nodev,mode=700 root /root
# An account's home exists once the account does (the tests' own accounts may come from the host).
while IFS=: read -r _ _ uid gid _ home _; do
    case "$home" in
    /home/*)
        $bb mkdir -p "$home"
        $bb chown "$uid:$gid" "$home"
        ;;
    esac
done </etc/passwd
# The host's own entries beneath those that the job needs (run-in-guest.sh lists them), as on the
# host, read-only.
while read -r path; do
    if [ -d "/run/tea-vm-host$path" ]; then
        must $bb mkdir -p "$path"
    else
        must $bb touch "$path"
    fi
    must $bb mount -o bind "/run/tea-vm-host$path" "$path"
done <"$job/keep"
# Every controller on cgroup2, mounted as systemd mounts it.
must $bb mount -t cgroup2 -o nosuid,nodev,noexec,nsdelegate,memory_recursiveprot cgroup2 \
    /sys/fs/cgroup
$bb hostname tea-vm
$bb ip link set lo up

# The tree systemd makes: itself in init.scope, the controllers it delegates enabled for the
# slices, and a login session's scope for root's job (a cgroup shared with other processes).
cg=/sys/fs/cgroup
must $bb mkdir -p "$cg/init.scope" "$cg/system.slice" "$cg/user.slice/user-0.slice/session-1.scope"
must $bb sh -c "echo $$ > $cg/init.scope/cgroup.procs"
for slice in "$cg" "$cg/system.slice" "$cg/user.slice" "$cg/user.slice/user-0.slice"; do
    must $bb sh -c "echo '+cpu +io +memory +pids' > $slice/cgroup.subtree_control"
done

say "guest up after $($bb cut -d' ' -f1 /proc/uptime) s; running the job"
(
    echo 0 >"$cg/user.slice/user-0.slice/session-1.scope/cgroup.procs"
    cd "$(cat "$job/cwd")" || exit 125
    exec env -i HOME=/root USER=root LOGNAME=root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/sh "$job/job.sh"
) </dev/null >/dev/console 2>&1
echo "$?" >"$job/status.tmp" && $bb mv "$job/status.tmp" "$job/status"
power_off
