# Included from bench/CMakeLists.txt: a tool-server round trip through the runner's conversation
# against the same server on pipes of the bench's own.
add_executable(bench_mcp_echo_server ${CMAKE_CURRENT_LIST_DIR}/mcp_echo_server.c)
add_executable(tool_server_bench ${CMAKE_CURRENT_LIST_DIR}/tool_server_bench.cpp)
target_link_libraries(tool_server_bench PRIVATE tea_core tea_services tea_warnings)
target_compile_definitions(tool_server_bench PRIVATE
  TEA_BENCH_MCP_SERVER="$<TARGET_FILE:bench_mcp_echo_server>")
add_dependencies(tool_server_bench bench_mcp_echo_server)
