#!/usr/bin/env bash
# Installs, from Debian 12's archive, whatever the build, the tests and the
# example need and the machine does not have yet. Needs root (or sudo).
set -euo pipefail
packages=(
  g++ clang libclang-rt-14-dev cmake ninja-build pkg-config git python3 python3-jsonschema curl
  openssl
  libboost-dev libtomlplusplus-dev nlohmann-json3-dev libgit2-dev libspdlog-dev libfmt-dev
  libcli11-dev libgtest-dev libseccomp-dev libssl-dev
  bubblewrap strace util-linux
)
# When tea-evaluate runs as root, the bubblewrap backend runs targets as this
# unprivileged account (docs/confinement.md).
sandbox_account() {
  id tea-sandbox >/dev/null 2>&1 && return 0
  [ "$(id -u)" -eq 0 ] || return 0
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin tea-sandbox
}
trap sandbox_account EXIT
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
