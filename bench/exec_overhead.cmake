add_executable(exec_overhead_bench ${CMAKE_CURRENT_LIST_DIR}/exec_overhead_bench.cpp)
target_link_libraries(exec_overhead_bench PRIVATE tea_core tea_warnings)
target_compile_definitions(exec_overhead_bench PRIVATE
  TEA_EVALUATE_BIN="$<TARGET_FILE:tea-evaluate>"
  TEA_SANDBOX_HELPER="$<TARGET_FILE:tea-sandbox-helper>")
add_dependencies(exec_overhead_bench tea-evaluate tea-backend-bubblewrap tea-backend-opt-out)

# The least a runtime around the call costs: a C parent with no work of its own.
add_executable(process_floor ${CMAKE_CURRENT_LIST_DIR}/process_floor.c)
target_link_libraries(process_floor PRIVATE tea_c_warnings)
target_compile_definitions(exec_overhead_bench PRIVATE
  TEA_PROCESS_FLOOR="$<TARGET_FILE:process_floor>")
add_dependencies(exec_overhead_bench process_floor)
