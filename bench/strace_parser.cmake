# Included from bench/CMakeLists.txt: throughput of the strace trace parser over the test corpus.
add_executable(strace_parser_bench ${CMAKE_CURRENT_LIST_DIR}/strace_parser_bench.cpp)
target_link_libraries(strace_parser_bench PRIVATE tea_strace_parser tea_warnings)
target_compile_definitions(strace_parser_bench PRIVATE
  TEA_STRACE_CORPUS_DIR="${CMAKE_CURRENT_LIST_DIR}/../tests/plugins/observer-strace/corpus")
