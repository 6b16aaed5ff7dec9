#!/bin/sh
# packages.purge, the packages test's cleanup: every tea-evaluate package purged, however the test
# ended. A test killed midway may have left a dpkg that still holds dpkg's lock for a moment (its
# watchdog kills the rest), so a purge refused is tried again, for up to two minutes.
set -u
tries=0
while :; do
  packages=$(dpkg-query --show --showformat='${db:Status-Abbrev} ${Package}\n' 'tea-evaluate*' \
    2>/dev/null | awk '$1 !~ /^[up]n/ { print $2 }')
  [ -z "$packages" ] && exit 0
  # shellcheck disable=SC2086 # a list of package names
  dpkg --purge $packages && exit 0
  tries=$((tries + 1))
  [ "$tries" -lt 120 ] || exit 1
  sleep 1
done
