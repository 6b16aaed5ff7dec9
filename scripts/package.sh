#!/usr/bin/env bash
# Builds the Debian packages from the release preset's build tree (build/release, installing to
# /usr): tea-evaluate (the runtime), tea-evaluate-sdk, one tea-evaluate-plugin-<name> per plugin,
# and a <package>-dbgsym (.ddeb) with the debug information of each that holds a binary. What
# scripts/test.sh built is reused: only what is missing of the installed targets is built.
#   scripts/package.sh [OUT_DIR]   (default build/release/packages; its old packages are removed)
# docs/packaging.md lists what each package holds.
set -euo pipefail
cd "$(dirname "$0")/.."
# Installed files get the modes the build gave them: none writable by group or others.
umask 022
build=build/release
out=${1:-$build/packages}
if [ ! -f "$build/CPackConfig.cmake" ]; then
  cmake --preset release >/dev/null
fi
cmake --build "$build" --target tea-shipped
mkdir -p "$out"
rm -f "$out"/*.deb "$out"/*.ddeb
rm -rf "$out/_CPack_Packages"
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$(cd "$out" && pwd)" >/dev/null
rm -rf "$out/_CPack_Packages"
# CPack 3.25 writes a -dbgsym package's md5sums with its own staging paths rather than the
# package's (so dpkg --verify cannot check them), leaves the .debug files executable and gives the
# package no copyright. Each is rebuilt as debhelper would make it: debug sections compressed (the
# runtime's installs 52 MiB rather than 141), mode 644, md5sums of the paths the package
# installs, and its doc folder a link to that of the package it depends on (whose copyright
# covers it).
for ddeb in "$out"/*.ddeb; do
  tree=$(mktemp -d)
  dpkg-deb --raw-extract "$ddeb" "$tree"
  package=$(dpkg-deb --field "$ddeb" Package)
  mkdir -p "$tree/usr/share/doc"
  ln -s "${package%-dbgsym}" "$tree/usr/share/doc/$package"
  find "$tree/usr/lib/debug" -type f -name '*.debug' \
    -exec objcopy --compress-debug-sections=zlib {} \; -exec chmod 644 {} +
  (cd "$tree" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$tree/DEBIAN/md5sums"
  size=$(du -k -s --exclude=DEBIAN "$tree" | cut -f1)
  sed -i "s/^Installed-Size: .*/Installed-Size: $size/" "$tree/DEBIAN/control"
  dpkg-deb --root-owner-group -Zgzip -z1 --build "$tree" "$ddeb" >/dev/null
  rm -rf "$tree"
done
ls -1 "$out"/*.deb "$out"/*.ddeb
