#!/usr/bin/env bash
# `tea-evaluate report` of a large run (issue 42): a run folder of 10 trials x 100 calls, each call
# with 10 paths outside the grants (10,000 in all) and stdout and stderr of 3,000 bytes each
# (bench/report_bench_records.py), its page written ROUNDS times; then that page loaded in headless
# Chromium against a trivial page loaded the same way (the browser's own start is the baseline).
# Medians of interleaved rounds (report, trivial load, report's load), after one warm-up of each
# that is not counted. The target: report
# under a second, a page of a few MB.
# Usage: bash bench/report_bench.sh [ROUNDS] [TEA_EVALUATE]   (from anywhere, after a release build)
#   TEA_EVALUATE (or the variable of that name) defaults to build/release/bin/tea-evaluate;
#   CHROMIUM defaults to /usr/bin/chromium.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
rounds=${1:-7}
bin=${2:-${TEA_EVALUATE:-$here/../build/release/bin/tea-evaluate}}
chromium=${CHROMIUM:-/usr/bin/chromium}
[[ -x "$bin" ]] || { echo "report_bench: no tea-evaluate at $bin (build the release preset)" >&2; exit 2; }
[[ -x "$chromium" ]] || { echo "report_bench: no Chromium at $chromium" >&2; exit 2; }
base=$(mktemp -d "${TMPDIR:-/tmp}/tea-report-bench-XXXXXX")
trap 'rm -rf "$base"' EXIT
export XDG_CONFIG_HOME=/nonexistent-tea-bench

# shellcheck source=bench/timing.sh
source "$here/timing.sh"
pressure() { echo "cpu pressure $1: $(head -1 /proc/pressure/cpu)"; }
load() { # load the page in headless Chromium and print its DOM, as the report's tests do
  "$chromium" --headless --no-sandbox --disable-gpu --user-data-dir="$base/profile" \
    --dump-dom "file://$1"
}

run_dir=$(python3 "$here/report_bench_records.py" "$base/runs")
page="$base/report.html"
trivial="$base/trivial.html"
printf '<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body><p>t</p></body></html>\n' >"$trivial"
echo "run folder: $(du -sh "$run_dir" | cut -f1), $(find "$run_dir" -type f | wc -l) files"

# One warm-up of each, not counted; the DOM Chromium built must hold the page's verdict, or the load
# is not measured.
"$bin" -q report "$run_dir" -o "$page" >/dev/null 2>&1 || true
[[ -s "$page" ]] || { echo "report_bench: report wrote no page" >&2; exit 1; }
page_bytes=$(stat -c %s "$page")
dom_bytes=$(load "$page" 2>/dev/null | tee "$base/dom.html" | wc -c)
grep -q 'id="verdict"' "$base/dom.html" || { echo "report_bench: Chromium did not load the page" >&2; exit 1; }
load "$trivial" >/dev/null 2>&1 || true

pressure before
report_times=() page_times=() trivial_times=()
for ((r = 1; r <= rounds; ++r)); do
  report_times+=("$(seconds "$bin" -q report "$run_dir" -o "$page")")
  trivial_times+=("$(seconds load "$trivial")")
  page_times+=("$(seconds load "$page")")
done
pressure after

rep=$(printf '%s\n' "${report_times[@]}" | median)
pg=$(printf '%s\n' "${page_times[@]}" | median)
tr=$(printf '%s\n' "${trivial_times[@]}" | median)
echo
echo "1,000 calls, 10,000 paths outside the grants; medians of $rounds interleaved rounds"
printf '%-34s %10s\n' "what" "median"
printf '%-34s %8.3f s\n' "tea-evaluate report" "$rep"
printf '%-34s %8.2f MB\n' "page size" "$(awk -v b="$page_bytes" 'BEGIN { print b / 1000000 }')"
printf '%-34s %8.2f MB\n' "DOM Chromium built" "$(awk -v b="$dom_bytes" 'BEGIN { print b / 1000000 }')"
printf '%-34s %8.3f s\n' "Chromium, trivial page" "$tr"
printf '%-34s %8.3f s\n' "Chromium, the report" "$pg"
printf '%-34s %8.3f s\n' "the report's load beyond trivial" "$(awk -v p="$pg" -v t="$tr" 'BEGIN { print p - t }')"
echo "rounds: report ${report_times[*]}"
echo "rounds: Chromium trivial ${trivial_times[*]}"
echo "rounds: Chromium report ${page_times[*]}"
