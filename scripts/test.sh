#!/usr/bin/env bash
# Builds and runs every test: the release build, then the same tests built with Clang's
# AddressSanitizer and UndefinedBehaviorSanitizer, four parsers under libFuzzer among them.
#
# On two cores most of the time is compiling, and much of a test suite's time is waiting (for
# a call to end, a kill to land, a guest to boot). So what comes next compiles while a suite
# runs, at the scheduler's idle class: it only takes a CPU that no test wants, and a test's
# timing is that of an otherwise idle machine. Its output follows the suite's.
set -euo pipefail
cd "$(dirname "$0")/.."
# As root the runtime loads only plugins that no other user can write (docs/plugin-authoring.md):
# the build tree is made so whatever umask the caller has.
umask 022
SECONDS=0

background_pid=
background_log=
# Starts "$@" in a process group of its own at the idle class, its output in a log.
in_background() {
  background_log=$1
  shift
  setsid chrt --idle 0 ionice -c 3 "$@" >"$background_log" 2>&1 &
  background_pid=$!
}
# Waits for the background step, shows its output, and fails as it failed.
join_background() {
  local status=0
  wait "$background_pid" || status=$?
  cat "$background_log"
  background_pid=
  return "$status"
}
stop_background() {
  if [ -n "$background_pid" ]; then
    kill -- "-$background_pid" 2>/dev/null || true
    wait "$background_pid" 2>/dev/null || true
  fi
}
# What each step took, printed as the script ends (whether it passed or not), so that the tail
# of a CI log says where the time went.
phase_times=()
phase_start=$SECONDS
phase_done() {
  phase_times+=("$1 $((SECONDS - phase_start)) s")
  phase_start=$SECONDS
}
on_exit() {
  stop_background
  local IFS=,
  echo "== time by step (total ${SECONDS} s): ${phase_times[*]}"
}
trap on_exit EXIT

bash scripts/install-deps.sh
phase_done "install"

for preset in release asan; do
  cmake --preset "$preset" >/dev/null
done
cmake --build --preset release
phase_done "release build"
mkdir -p build/asan
in_background build/asan/build.log cmake --build --preset asan
ctest --preset release
phase_done "release suite"
echo "== the sanitized build, made while the release suite ran:"
join_background
phase_done "rest of the sanitized build"

# The sanitized build is made with Clang (CMakePresets.json), so it also builds four parsers of
# bytes the runtime does not control under libFuzzer (cmake/TeaFuzz.cmake), and its suite runs
# each for a bounded time; a crash leaves its input in the build tree and fails the suite.
ctest --preset asan
phase_done "sanitized suite"
