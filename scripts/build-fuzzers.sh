#!/usr/bin/env bash
# Compiles the libFuzzer targets that scripts/test.sh runs into the folder it names, with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer: the egress proxy's request-head parser, the git
# module's pack reader, the streaming redaction, and the HTTP probe client's response parser.
#
#   build-fuzzers.sh OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: build-fuzzers.sh OUT_DIR}
mkdir -p "$out"
# shellcheck disable=SC2054 # -fsanitize takes one comma-separated value
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
clang++ "${flags[@]}" \
  -Iplugins/egress-connect/src tests/plugins/egress-connect/request_head_fuzz.cpp \
  plugins/egress-connect/src/request_head.cpp -o "$out/request_head_fuzz"
git_src=core/git
clang++ "${flags[@]}" -Icore tests/core/git/pack_reader_fuzz.cpp \
  $git_src/pack_reader.cpp $git_src/pack_index.cpp $git_src/delta.cpp \
  $git_src/delta_base_cache.cpp $git_src/mapped_file.cpp $git_src/pack_checksum.cpp \
  -lgit2 -lz -lcrypto -o "$out/pack_reader_fuzz"
redaction_src=core/redaction
clang++ "${flags[@]}" -Icore -Itests tests/core/redaction/stream_redactor_fuzz.cpp \
  $redaction_src/secret_matcher.cpp $redaction_src/stream_redactor.cpp \
  -o "$out/stream_redactor_fuzz"
clang++ "${flags[@]}" -Icore -Itests tests/core/http/http_response_parser_fuzz.cpp \
  core/http/http_response_parser.cpp -o "$out/http_response_parser_fuzz"
