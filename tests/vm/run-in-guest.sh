#!/usr/bin/env bash
# Runs one command as root in a fresh Linux guest whose every cgroup controller is on cgroup2,
# the way a systemd host has it, and exits with the command's status.
#
#   tests/vm/run-in-guest.sh [--timeout SECONDS] [--env NAME=VALUE]... [--] COMMAND [ARG...]
#
# The guest boots Debian 12's kernel (scripts/install-deps.sh puts it in
# /var/cache/tea-evaluate-vm) from a small initramfs (busybox and the modules that reach the
# host, tests/vm/init.sh). It sees the host's root read-only through virtio-9p, beneath a
# writable layer that dies with the guest, with /tmp, /var/tmp, /run, /home and /root fresh and
# empty but for the host's entries the command names (tests/vm/guest.sh). The command runs in
# the current directory, as root in a login
# session's scope, with only the environment named by --env added to a minimal one; its output
# is the guest's console, on this script's stdout.
#
# The guest runs under KVM where the processor offers hardware virtualisation, and otherwise
# under QEMU's emulator (TCG), much slower: a /dev/kvm without it (a paravirtual KVM such as PVM,
# which boots only kernels built for it) cannot run a stock kernel. TEA_VM_ACCEL=kvm|tcg decides
# instead.
#
# Exit status: the command's; 77 when this host has no /dev/kvm (and TEA_VM_ACCEL is unset):
# the caller skips, loudly; 70 when the guest could not be started, did not boot or did not
# report a status (the reason on stderr).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
timeout=900
envs=()
while [ $# -gt 0 ]; do
    case "$1" in
    --timeout) timeout=$2; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --) shift; break ;;
    -*) echo "run-in-guest: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--timeout S] [--env NAME=VALUE]... [--] COMMAND [ARG...]" >&2; exit 2; }

fail() {
    echo "run-in-guest: $*" >&2
    exit 70
}

accel=${TEA_VM_ACCEL:-}
if [ -z "$accel" ]; then
    if [ ! -e /dev/kvm ]; then
        echo "run-in-guest: SKIPPED: this host has no /dev/kvm, so no guest is booted and the" \
            "cgroup2 tests do not run here (TEA_VM_ACCEL=tcg runs them under the emulator)" >&2
        exit 77
    fi
    if grep -qw -e vmx -e svm /proc/cpuinfo && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
        accel=kvm
    else
        accel=tcg
        echo "run-in-guest: /dev/kvm is there but the processor shows no hardware" \
            "virtualisation (a paravirtual KVM cannot boot a stock kernel): the guest runs under" \
            "QEMU's emulator, slowly" >&2
    fi
fi
case "$accel" in
kvm) cpu=host ;;
tcg) cpu=max ;;
*) fail "TEA_VM_ACCEL is $accel; kvm or tcg" ;;
esac

qemu=$(command -v qemu-system-x86_64) || fail "qemu-system-x86_64 is missing: run scripts/install-deps.sh"
busybox=$(command -v busybox) || fail "busybox is missing: run scripts/install-deps.sh"
[ "$(uname -m)" = x86_64 ] || fail "the guest is x86_64, this host is $(uname -m)"
kernels=${TEA_VM_KERNEL_DIR:-/var/cache/tea-evaluate-vm}
kernel_dir=$(find "$kernels" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | sort | tail -n 1 || true)
if [ -z "$kernel_dir" ] || [ ! -f "$kernel_dir/vmlinux" ]; then
    fail "no guest kernel in $kernels: run scripts/install-deps.sh"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tea-vm.XXXXXX")
qemu_pid=
# shellcheck disable=SC2317 # run by the traps
cleanup() {
    [ -z "$qemu_pid" ] || kill -TERM "$qemu_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The initramfs: busybox, the modules in load order, and init.sh.
initrd=$work/initrd
mkdir -p "$initrd"/{bin,dev,proc,modules}
cp "$busybox" "$initrd/bin/busybox"
modules=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
    9pnet 9pnet_virtio netfs fscache 9p overlay)
for m in "${modules[@]}"; do
    ko=$(find "$kernel_dir/modules" -name "$m.ko" | head -n 1)
    [ -n "$ko" ] || fail "the module $m is not in $kernel_dir/modules"
    cp "$ko" "$initrd/modules/"
done
printf '%s\n' "${modules[@]}" >"$initrd/modules/order"
cp "$here/init.sh" "$initrd/init"
chmod 755 "$initrd/init"
(cd "$initrd" && find . | sort | "$busybox" cpio -o -H newc 2>/dev/null) | gzip -1 >"$work/initrd.gz"

# The job: guest.sh, the directory to run in, and the command with its environment, quoted.
job=$work/job
mkdir "$job"
cp "$here/guest.sh" "$job/guest.sh"
pwd >"$job/cwd"
# What the guest has fresh and empty hides the host's own entries there; those the command needs
# (the directory it runs in, a path among its arguments) are shown as on the host.
for path in "$PWD" "$@"; do
    case "$path" in
    /var/tmp/?*) echo "$path" | cut -d/ -f1-4 ;;
    /tmp/?* | /home/?* | /root/?*) echo "$path" | cut -d/ -f1-3 ;;
    esac
done | sort -u | while read -r top; do
    [ ! -e "$top" ] || echo "$top"
done >"$job/keep"
quote() {
    local s=${1//\'/\'\\\'\'}
    printf "'%s'" "$s"
}
{
    printf 'exec env'
    for e in "${envs[@]}"; do printf ' %s' "$(quote "$e")"; done
    for a in "$@"; do printf ' %s' "$(quote "$a")"; done
    printf '\n'
} >"$job/job.sh"

# The same every time: the console on the serial port with only emergencies on it (an OOM kill
# is a test's subject, not news), a panic ends the guest, no cgroup v1 hierarchy can be mounted,
# the kernel at a fixed address, and no mitigations of speculative execution (costly under the
# emulator, and nothing here is a secret).
cmdline="console=ttyS0 loglevel=1 panic=-1 mitigations=off nokaslr cgroup_no_v1=all rdinit=/init"
started=$(date +%s)
# A guest that hangs is ended after --timeout seconds, and reports nothing.
timeout -s TERM -k 10 "$timeout" "$qemu" -name tea-vm -machine pc -accel "$accel" -cpu "$cpu" \
    -m 2G -smp 2 -bios qboot.rom -nodefaults -no-user-config -no-reboot -display none \
    -chardev "file,id=console,path=/dev/stdout,append=on" -serial chardev:console \
    -kernel "$kernel_dir/vmlinux" -initrd "$work/initrd.gz" -append "$cmdline" \
    -virtfs "local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap" \
    -virtfs "local,path=$job,mount_tag=job,security_model=none" &
qemu_pid=$!
set +e
wait "$qemu_pid"
qemu_status=$?
set -e
qemu_pid=
elapsed=$(( $(date +%s) - started ))
if [ ! -f "$job/status" ]; then
    fail "the guest reported no status after ${elapsed} s (qemu exited with $qemu_status; accelerator $accel, kernel $kernel_dir; the console is above)"
fi
status=$(cat "$job/status")
case "$status" in
'' | *[!0-9]*) fail "the guest reported the status \"$status\"" ;;
esac
echo "run-in-guest: the command exited with $status in the guest ($accel, $(basename "$kernel_dir"), ${elapsed} s)" >&2
exit "$status"
