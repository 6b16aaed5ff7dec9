# Included from bench/CMakeLists.txt: a turn of the sealed-brief relay against a bare pipe round
# trip to the same target.
add_executable(bench_relay_echo_target ${CMAKE_CURRENT_LIST_DIR}/relay_echo_target.c)
add_executable(brief_relay_bench ${CMAKE_CURRENT_LIST_DIR}/brief_relay_bench.cpp)
target_link_libraries(brief_relay_bench PRIVATE tea_trials tea_warnings)
target_compile_definitions(brief_relay_bench PRIVATE
  TEA_BENCH_RELAY_TARGET="$<TARGET_FILE:bench_relay_echo_target>")
add_dependencies(brief_relay_bench bench_relay_echo_target)
