#!/bin/busybox sh
# shellcheck shell=dash
# The guest's first program, in its initramfs (run-in-guest.sh builds it): loads the modules
# that reach the host, shows the host's root read-only beneath a writable layer that dies with
# the guest, mounts the job's folder, and hands over to guest.sh in the new root.
bb=/bin/busybox
fail() {
    echo "tea-vm: init: $*" >/dev/console
    $bb poweroff -f
}
$bb mount -t proc proc /proc || fail "cannot mount /proc"
$bb mount -t devtmpfs dev /dev
# In dependency order; the list is the one run-in-guest.sh copied.
for module in $($bb cat /modules/order); do
    $bb insmod "/modules/$module.ko" || fail "cannot load the module $module"
done
p9="trans=virtio,version=9p2000.L,msize=512000"
$bb mkdir -p /host /layer /newroot
# The host's root: read-only, cached by the guest (it does not change while the guest runs).
$bb mount -t 9p -o "$p9,ro,cache=loose" hostroot /host || fail "cannot mount the host's root"
$bb mount -t tmpfs -o mode=755 layer /layer
$bb mkdir /layer/upper /layer/work
$bb mount -t overlay -o lowerdir=/host,upperdir=/layer/upper,workdir=/layer/work root /newroot ||
    fail "cannot make the writable root"
$bb mount -t tmpfs -o mode=755,nosuid,nodev run /newroot/run
# The host's root once more, for what guest.sh shows as on the host beneath its fresh directories.
$bb mkdir /newroot/run/tea-vm-host
$bb mount -o bind /host /newroot/run/tea-vm-host
$bb mkdir /newroot/run/tea-vm
$bb mount -t 9p -o "$p9,cache=none" job /newroot/run/tea-vm || fail "cannot mount the job's folder"
$bb mkdir /newroot/run/tea-vm-bin
$bb cp /bin/busybox /newroot/run/tea-vm-bin/busybox
$bb umount /proc
$bb umount /dev
exec $bb switch_root /newroot /run/tea-vm-bin/busybox sh /run/tea-vm/guest.sh
