#!/bin/sh
# The SDK as a plugin author outside this tree gets it:
#  1. install the sdk component alone into a temporary prefix, check its layout;
#  2. build tests/sdk/out_of_tree (a C backend) with find_package(TeaSdk 1.0);
#  3. build a one-file C plugin with nothing but pkg-config --cflags tea-sdk;
#  4. build tests/sdk/out_of_tree_documents (a C++ backend written against
#     tea/documents.hpp, the one docs/plugin-authoring.md shows);
#  5. run them with the real tea-evaluate: 'plugins' lists them, and 'exec'
#     runs a command through each out-of-tree backend with its exit status;
#  6. build tests/sdk/out_of_tree_which (a C++ backend that finds its target with
#     tea/program_path.hpp): it finds past a file that may not be executed and
#     says EACCES or ENOENT; a plugin with an undefined symbol does not link; its
#     INSTALL puts it where a runtime installed in the same prefix finds it.
set -eu

usage() { echo "usage: $0 --cmake CMAKE --build-dir DIR --source DIR --work DIR --cc CC --cxx CXX --generator GEN --tea-evaluate EXE" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --cmake) cmake=$2 ;;
        --build-dir) build_dir=$2 ;;
        --source) source_dir=$2 ;;
        --work) work=$2 ;;
        --cc) cc=$2 ;;
        --cxx) cxx=$2 ;;
        --generator) generator=$2 ;;
        --tea-evaluate) tea=$2 ;;
        *) usage ;;
    esac
    shift 2
done
[ -n "${cmake:-}" ] && [ -n "${build_dir:-}" ] && [ -n "${source_dir:-}" ] && [ -n "${work:-}" ] &&
    [ -n "${cc:-}" ] && [ -n "${cxx:-}" ] && [ -n "${generator:-}" ] && [ -n "${tea:-}" ] || usage

fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "--- $*"; }

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
step "install the sdk component into $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix" --component sdk

# The ABI the installed header declares, MAJOR.MINOR: the SDK's version must be the same.
abi=$(sed -n 's/^#define TEA_ABI_MAJOR \([0-9]*\)$/\1/p' "$prefix/include/tea/plugin.h").$(sed -n 's/^#define TEA_ABI_MINOR \([0-9]*\)$/\1/p' "$prefix/include/tea/plugin.h")
[ "$abi" != "." ] || fail "no TEA_ABI_MAJOR/TEA_ABI_MINOR in the installed plugin.h"

step "check the installed layout"
for header in plugin.h plugin.hpp bytes.hpp json_bytes.hpp program_path.hpp documents.hpp; do
    [ -f "$prefix/include/tea/$header" ] || fail "include/tea/$header was not installed"
done
config=$(find "$prefix" -name TeaSdkConfig.cmake)
[ -n "$config" ] || fail "TeaSdkConfig.cmake was not installed"
cmakedir=$(dirname "$config")
for file in TeaSdkConfigVersion.cmake TeaSdkTargets.cmake plugin-manifest.toml.in; do
    [ -f "$cmakedir/$file" ] || fail "$file is not beside TeaSdkConfig.cmake in $cmakedir"
done
pc=$(find "$prefix" -name tea-sdk.pc)
[ -n "$pc" ] || fail "tea-sdk.pc was not installed"
# The sdk component is the SDK alone (and its package's copyright and changelog): no runtime, no
# plugin.
unexpected=$(cd "$prefix" && find . -type f | grep -v -E '^\./include/tea/|/cmake/TeaSdk/|/pkgconfig/tea-sdk\.pc$|^\./share/doc/tea-evaluate-sdk/(copyright|changelog\.gz)$' || true)
[ -z "$unexpected" ] || fail "the sdk component installed more than the SDK: $unexpected"

step "build the out-of-tree plugin with find_package(TeaSdk 1.0)"
oot=$work/build
"$cmake" -S "$source_dir" -B "$oot" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
"$cmake" --build "$oot"
[ -f "$oot/plugins.d/oot-echo.toml" ] || fail "tea_sdk_add_plugin wrote no manifest"
[ -f "$oot/plugins.d/libtea-backend-oot-echo.so" ] || fail "tea_sdk_add_plugin built no library"
grep -q '^library = "libtea-backend-oot-echo.so"$' "$oot/plugins.d/oot-echo.toml" ||
    fail "the manifest names the wrong library: $(cat "$oot/plugins.d/oot-echo.toml")"
# Built with hidden visibility: the entry symbol is the only function it exports.
exported=$(nm -D --defined-only "$oot/plugins.d/libtea-backend-oot-echo.so" | awk '$2 == "T" { print $3 }')
[ "$exported" = "tea_plugin_entry" ] || fail "the plugin exports more than its entry: $exported"

step "find_package(TeaSdk 2.0) is refused: the SDK's version is its ABI's"
mkdir -p "$work/v2"
cat > "$work/v2/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(v2 LANGUAGES NONE)
find_package(TeaSdk 2.0 REQUIRED)
CMAKE
if "$cmake" -S "$work/v2" -B "$work/v2/build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/v2.out" 2>&1; then
    fail "find_package(TeaSdk 2.0) accepted an ABI 1 SDK"
fi
grep -qF "$abi" "$work/v2.out" || fail "the refusal of TeaSdk 2.0 does not say what was found: $(cat "$work/v2.out")"

step "build a one-file plugin with pkg-config --cflags tea-sdk"
export PKG_CONFIG_PATH="$(dirname "$pc")"
[ "$(pkg-config --modversion tea-sdk)" = "$abi" ] || fail "pkg-config --modversion tea-sdk: $(pkg-config --modversion tea-sdk)"
cflags=$(pkg-config --cflags tea-sdk)
# The .pc file is relocatable (prefix=${pcfiledir}/...): compare resolved directories.
include_flag=$(printf '%s\n' $cflags | grep '^-I' | head -n 1)
[ -n "$include_flag" ] || fail "pkg-config --cflags tea-sdk gives no -I: '$cflags'"
pc_include=$(cd "${include_flag#-I}" 2>/dev/null && pwd -P) ||
    fail "pkg-config --cflags tea-sdk points at ${include_flag#-I}, which does not exist"
[ "$pc_include" = "$(cd "$prefix/include" && pwd -P)" ] ||
    fail "pkg-config --cflags tea-sdk points at $pc_include, not the installed $prefix/include"
pcdir=$work/pc-plugins.d
mkdir -p "$pcdir"
# shellcheck disable=SC2086 # cflags is a list of flags
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -shared -fPIC $cflags \
    -o "$pcdir/libtea-login-oot-pc.so" "$source_dir/oot_pc.c"
cat > "$pcdir/oot-pc.toml" <<TOML
name = "oot-pc"
kind = "login"
abi = "1.0"
library = "libtea-login-oot-pc.so"
TOML

step "build a C++ backend written against tea/documents.hpp"
documents_source=$(dirname "$source_dir")/out_of_tree_documents
documents_build=$work/build-documents
"$cmake" -S "$documents_source" -B "$documents_build" -G "$generator" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS="-Wall -Wextra -Wpedantic -Werror"
"$cmake" --build "$documents_build"
[ -f "$documents_build/plugins.d/libtea-backend-nice.so" ] || fail "the documents.hpp backend was not built"

step "run them with $tea"
# Only this test's configuration: no user file, no user plugins.d.
export XDG_CONFIG_HOME="$work/xdg"
export HOME="$work/home"
mkdir -p "$XDG_CONFIG_HOME" "$HOME"
cat > "$work/config.toml" <<TOML
[plugins]
paths = ["$oot/plugins.d", "$pcdir", "$documents_build/plugins.d"]
TOML
"$tea" --config "$work/config.toml" plugins > "$work/plugins.out" 2>&1 ||
    fail "tea-evaluate plugins failed: $(cat "$work/plugins.out")"
cat "$work/plugins.out"
# Each declares the minor it implements, 1.0, whatever minor the SDK's header has reached.
grep -E "^oot-echo +backend +ABI 1\.0 +available +$oot/plugins.d/libtea-backend-oot-echo\.so$" \
    "$work/plugins.out" > /dev/null || fail "tea-evaluate plugins does not list oot-echo as available"
grep -E "^oot-pc +login +ABI 1\.0 +available " "$work/plugins.out" > /dev/null ||
    fail "tea-evaluate plugins does not list oot-pc as available"
grep -E "^nice +backend +ABI 1\.3 +available " "$work/plugins.out" > /dev/null ||
    fail "tea-evaluate plugins does not list the documents.hpp backend nice as available"

# A workspace of its own: $work holds the folders of plugin manifests, which a workspace may not.
mkdir -p "$work/ws"
cd "$work/ws"
status=0
"$tea" --config "$work/config.toml" exec --backend oot-echo -- sh -c 'echo oot; exit 5' \
    > "$work/exec.out" 2> "$work/exec.err" || status=$?
[ "$status" -eq 5 ] || fail "exec exited $status, expected 5; stderr: $(cat "$work/exec.err")"
[ "$(cat "$work/exec.out")" = "oot" ] || fail "exec printed '$(cat "$work/exec.out")', expected 'oot'"
grep -q "confines nothing" "$work/exec.err" || fail "no warning that oot-echo confines nothing"

# Arguments with spaces, quotes, a backslash and non-ASCII reach the target
# exactly: the C plugin copies the spec's JSON text into the plan untouched.
status=0
"$tea" --config "$work/config.toml" exec --backend oot-echo -- \
    sh -c 'printf "%s|" "$@"' sh 'a b' 'q"uote' 'back\slash' 'café' \
    > "$work/args.out" 2> "$work/args.err" || status=$?
[ "$status" -eq 0 ] || fail "exec exited $status; stderr: $(cat "$work/args.err")"
[ "$(cat "$work/args.out")" = 'a b|q"uote|back\slash|café|' ] ||
    fail "the arguments arrived as '$(cat "$work/args.out")'"

# The documents.hpp backend: its plan runs the target under nice with the spec's arguments as
# they came, and exec reports the target's status.
status=0
"$tea" --config "$work/config.toml" exec --backend nice -- \
    sh -c 'nice; printf "%s|" "$@"; exit 3' sh 'a b' 'café' \
    > "$work/nice.out" 2> "$work/nice.err" || status=$?
[ "$status" -eq 3 ] || fail "exec --backend nice exited $status, expected 3; stderr: $(cat "$work/nice.err")"
niceness=$(( $(nice) + 10 ))
[ "$niceness" -le 19 ] || niceness=19
[ "$(cat "$work/nice.out")" = "$(printf '%s\na b|café|' "$niceness")" ] ||
    fail "exec --backend nice printed '$(cat "$work/nice.out")', expected the niceness $niceness and the arguments"

step "build the C++ plugin that finds its target as execvp would"
which_build=$work/which
"$cmake" -S "$source_dir/../out_of_tree_which" -B "$which_build" -G "$generator" \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
"$cmake" --build "$which_build"
grep -q '^abi = "1.0"$' "$which_build/plugins.d/oot-which.toml" ||
    fail "tea_sdk_add_plugin(ABI 1.0) wrote another abi: $(cat "$which_build/plugins.d/oot-which.toml")"
# Two folders of PATH with a 'prog': the first may not be executed, so execvp runs the second.
mkdir -p "$work/path-a" "$work/path-b" "$work/path-c"
printf '#!/bin/sh\necho a\n' > "$work/path-a/prog"
chmod 0644 "$work/path-a/prog"
printf '#!/bin/sh\necho b\n' > "$work/path-b/prog"
chmod 0755 "$work/path-b/prog"
cat > "$work/which.toml" <<TOML
[plugins]
paths = ["$which_build/plugins.d"]
TOML
status=0
PATH="$work/path-a:$work/path-b:/usr/bin:/bin" "$tea" --config "$work/which.toml" exec \
    --backend oot-which -- prog > "$work/which.out" 2> "$work/which.err" || status=$?
[ "$status" -eq 0 ] || fail "exec through oot-which exited $status: $(cat "$work/which.err")"
[ "$(cat "$work/which.out")" = "b" ] ||
    fail "oot-which ran '$(cat "$work/which.out")', expected the executable prog of path-b"
# The runtime looks the command up on its own PATH before the backend is asked (docs/cli.md):
# a prog it may not execute is 126, none at all 127, whatever the backend.
status=0
PATH="$work/path-a:$work/path-c:/usr/bin:/bin" "$tea" --config "$work/which.toml" exec \
    --backend oot-which -- prog > /dev/null 2> "$work/which.err" || status=$?
[ "$status" -eq 126 ] || fail "a prog that may not be executed exited $status: $(cat "$work/which.err")"
status=0
PATH="$work/path-c:/usr/bin:/bin" "$tea" --config "$work/which.toml" exec \
    --backend oot-which -- prog > /dev/null 2> "$work/which.err" || status=$?
[ "$status" -eq 127 ] || fail "a missing prog exited $status: $(cat "$work/which.err")"
# The plugin resolves with the target's own PATH (--env), which may differ from the runtime's.
status=0
PATH="$work/path-b:/usr/bin:/bin" "$tea" --config "$work/which.toml" exec \
    --env "PATH=$work/path-a:$work/path-c:/usr/bin:/bin" \
    --backend oot-which -- prog > /dev/null 2> "$work/which.err" || status=$?
[ "$status" -ne 0 ] || fail "oot-which ran a prog that may not be executed"
grep -q "prog: found, but not executable (EACCES)" "$work/which.err" ||
    fail "oot-which did not say EACCES: $(cat "$work/which.err")"
status=0
PATH="$work/path-b:/usr/bin:/bin" "$tea" --config "$work/which.toml" exec \
    --env "PATH=$work/path-c:/usr/bin:/bin" \
    --backend oot-which -- prog > /dev/null 2> "$work/which.err" || status=$?
grep -q "prog: not found (ENOENT)" "$work/which.err" ||
    fail "oot-which did not say ENOENT: $(cat "$work/which.err")"

step "a plugin with an undefined symbol does not link (tea_sdk_add_plugin: --no-undefined)"
if "$cmake" -S "$source_dir/../out_of_tree_which" -B "$work/undefined" -G "$generator" \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" -DOOT_UNDEFINED=ON \
    > "$work/undefined.out" 2>&1 &&
    "$cmake" --build "$work/undefined" --target tea-backend-oot-undefined >> "$work/undefined.out" 2>&1; then
    fail "a plugin calling oot_defined_nowhere linked"
fi
grep -q "undefined reference to .oot_defined_nowhere" "$work/undefined.out" ||
    fail "the link did not fail for the undefined symbol: $(tail -n 20 "$work/undefined.out")"

step "tea_sdk_add_plugin(INSTALL) installs where a runtime of the same prefix looks"
runtime_prefix=$work/runtime-prefix
"$cmake" --install "$build_dir" --prefix "$runtime_prefix" --component runtime
"$cmake" --install "$which_build" --prefix "$runtime_prefix"
[ -f "$runtime_prefix/lib/tea-evaluate/plugins/libtea-backend-oot-which.so" ] ||
    fail "INSTALL put no library in lib/tea-evaluate/plugins"
[ -f "$runtime_prefix/lib/tea-evaluate/plugins.d/oot-which.toml" ] ||
    fail "INSTALL put no manifest in lib/tea-evaluate/plugins.d"
"$runtime_prefix/bin/tea-evaluate" plugins > "$work/installed.out" 2>&1 ||
    fail "the installed tea-evaluate plugins failed: $(cat "$work/installed.out")"
grep -E "^oot-which +backend +ABI 1\.0 +available +$runtime_prefix/lib/tea-evaluate/plugins/libtea-backend-oot-which\.so$" \
    "$work/installed.out" > /dev/null ||
    fail "the installed runtime does not list the installed oot-which: $(cat "$work/installed.out")"

echo "PASS"
