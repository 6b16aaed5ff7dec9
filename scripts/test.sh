#!/usr/bin/env bash
# Builds and runs every test: the release build, then the same tests built with
# AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
# As root the runtime loads only plugins that no other user can write (docs/plugin-authoring.md):
# the build tree is made so whatever umask the caller has.
umask 022
bash scripts/install-deps.sh
for preset in release asan; do
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
# Three parsers of bytes the runtime does not control, each under libFuzzer (with ASan and UBSan)
# for a bounded time: the egress proxy's request-head parser, the git module's reader of the
# project's packs (index, entries, zlib, delta chains, deltas), and the HTTP probe client's reader
# of what a service answers; and the redaction of a login's
# secrets from a stream written in pieces, against the naive replacement. Their seed corpora are
# also replayed by ctest in both builds above. New inputs stay in the build tree, and a crash
# leaves its input there and fails this script.
fuzz=build/fuzz
mkdir -p "$fuzz/corpus" "$fuzz/pack-corpus" "$fuzz/redaction-corpus" "$fuzz/http-corpus"
fuzz_flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
clang++ "${fuzz_flags[@]}" \
  -Iplugins/egress-connect/src tests/plugins/egress-connect/request_head_fuzz.cpp \
  plugins/egress-connect/src/request_head.cpp -o "$fuzz/request_head_fuzz"
"$fuzz/request_head_fuzz" -max_total_time=30 -max_len=20000 -timeout=10 \
  -artifact_prefix="$fuzz/" "$fuzz/corpus" tests/plugins/egress-connect/fuzz_corpus
git_src=core/git
clang++ "${fuzz_flags[@]}" -Icore tests/core/git/pack_reader_fuzz.cpp \
  $git_src/pack_reader.cpp $git_src/pack_index.cpp $git_src/delta.cpp \
  $git_src/delta_base_cache.cpp $git_src/mapped_file.cpp $git_src/pack_checksum.cpp \
  -lgit2 -lz -lcrypto -o "$fuzz/pack_reader_fuzz"
"$fuzz/pack_reader_fuzz" -max_total_time=20 -max_len=16384 -timeout=10 \
  -artifact_prefix="$fuzz/pack-" "$fuzz/pack-corpus" tests/core/git/pack_reader_fuzz_corpus
redaction_src=core/redaction
clang++ "${fuzz_flags[@]}" -Icore -Itests tests/core/redaction/stream_redactor_fuzz.cpp \
  $redaction_src/secret_matcher.cpp $redaction_src/stream_redactor.cpp \
  -o "$fuzz/stream_redactor_fuzz"
"$fuzz/stream_redactor_fuzz" -max_total_time=15 -max_len=4096 -timeout=10 \
  -artifact_prefix="$fuzz/redaction-" "$fuzz/redaction-corpus" \
  tests/core/redaction/stream_redactor_fuzz_corpus
clang++ "${fuzz_flags[@]}" -Icore -Itests tests/core/http/http_response_parser_fuzz.cpp \
  core/http/http_response_parser.cpp -o "$fuzz/http_response_parser_fuzz"
"$fuzz/http_response_parser_fuzz" -max_total_time=20 -max_len=4096 -timeout=10 \
  -artifact_prefix="$fuzz/http-" "$fuzz/http-corpus" \
  tests/core/http/http_response_parser_fuzz_corpus
