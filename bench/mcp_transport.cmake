# Included from bench/CMakeLists.txt: the tool-server client's round trip over the streamable HTTP
# transport against its stdio one, on the MCP SDK's servers that scripts/install-deps.sh installs.
# It starts them with the tests' helpers (tea_test_support), so it is built with the tests.
if(TEA_BUILD_TESTS)
  add_executable(mcp_transport_bench ${CMAKE_CURRENT_LIST_DIR}/mcp_transport_bench.cpp)
  target_include_directories(mcp_transport_bench PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(mcp_transport_bench PRIVATE tea_services tea_test_support tea_warnings)
  target_compile_definitions(mcp_transport_bench PRIVATE
    TEA_BENCH_NODE="/var/cache/tea-evaluate-deps/node-22.23.5/bin/node"
    TEA_BENCH_MCP_FILESYSTEM="/var/cache/tea-evaluate-deps/mcp-server-filesystem-2026.8.31/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
    TEA_BENCH_MCP_MODULES="/var/cache/tea-evaluate-deps/mcp-server-filesystem-2026.8.31/node_modules"
    TEA_BENCH_MCP_HTTP_SDK_SERVER="${PROJECT_SOURCE_DIR}/tests/core/services/mcp_http_sdk_server.mjs")
endif()
