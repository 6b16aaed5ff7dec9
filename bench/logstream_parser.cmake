# Included from bench/CMakeLists.txt: throughput of the log-stream observer's ndjson parser.
add_executable(logstream_parser_bench ${CMAKE_CURRENT_LIST_DIR}/logstream_parser_bench.cpp)
target_link_libraries(logstream_parser_bench PRIVATE tea_logstream_parser tea_warnings)
target_compile_definitions(logstream_parser_bench PRIVATE
  TEA_LOGSTREAM_CORPUS_DIR="${CMAKE_CURRENT_LIST_DIR}/../tests/plugins/observer-logstream/corpus")
