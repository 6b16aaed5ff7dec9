# Included from bench/CMakeLists.txt: the audited call against the unaudited one, raw
# strace+bwrap, raw bwrap and bare execution.
add_executable(bench_open_files ${CMAKE_CURRENT_LIST_DIR}/open_files.c)
target_link_libraries(bench_open_files PRIVATE tea_c_warnings)
add_executable(audit_overhead_bench ${CMAKE_CURRENT_LIST_DIR}/audit_overhead_bench.cpp)
target_link_libraries(audit_overhead_bench PRIVATE tea_strace_parser tea_core tea_warnings)
target_include_directories(audit_overhead_bench PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/../plugins/observer-strace/src)
target_compile_definitions(audit_overhead_bench PRIVATE
  TEA_EVALUATE_BIN="$<TARGET_FILE:tea-evaluate>"
  TEA_SANDBOX_HELPER="$<TARGET_FILE:tea-sandbox-helper>"
  TEA_OPEN_FILES="$<TARGET_FILE:bench_open_files>"
  TEA_PROCESS_FLOOR="$<TARGET_FILE:process_floor>")
add_dependencies(audit_overhead_bench tea-evaluate tea-backend-bubblewrap tea-observer-strace
  bench_open_files process_floor)
if(TARGET tea-observer-ebpf)
  target_compile_definitions(audit_overhead_bench PRIVATE TEA_BENCH_EBPF)
  add_dependencies(audit_overhead_bench tea-observer-ebpf)
endif()
if(TARGET tea-observer-seccomp)
  target_compile_definitions(audit_overhead_bench PRIVATE TEA_BENCH_SECCOMP)
  add_dependencies(audit_overhead_bench tea-observer-seccomp)
endif()
