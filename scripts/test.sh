#!/usr/bin/env bash
# Builds and runs every test: the release build, then the same tests built with
# AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
for preset in release asan; do
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
# The egress proxy's request-head parser under libFuzzer (with ASan and UBSan) for a bounded
# time; the seed corpus is also replayed by ctest in both builds above. New inputs stay in the
# build tree, and a crash leaves its input there and fails this script.
fuzz=build/fuzz
mkdir -p "$fuzz/corpus"
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -Iplugins/egress-connect/src tests/plugins/egress-connect/request_head_fuzz.cpp \
  plugins/egress-connect/src/request_head.cpp -o "$fuzz/request_head_fuzz"
"$fuzz/request_head_fuzz" -max_total_time=30 -max_len=20000 -timeout=10 \
  -artifact_prefix="$fuzz/" "$fuzz/corpus" tests/plugins/egress-connect/fuzz_corpus
