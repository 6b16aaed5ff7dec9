# Included from bench/CMakeLists.txt: a rubric judge's round trip against the Messages API mock,
# beside the bare CLI's. It starts the mock with the client tests' helper, so it is built where
# they are (tests/clients/CMakeLists.txt: the release build, x86-64, with the bubblewrap harness).
if(TEA_BUILD_TESTS AND NOT TEA_SANITIZE AND TARGET tea-backend-bubblewrap
   AND TARGET tea-egress-connect AND TARGET tea-observer-strace
   AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
  add_executable(judge_bench ${CMAKE_CURRENT_LIST_DIR}/judge_bench.cpp
    ${PROJECT_SOURCE_DIR}/core/cli/runtime.cpp ${PROJECT_SOURCE_DIR}/tests/clients/messages_api_mock.cpp)
  target_include_directories(judge_bench PRIVATE ${PROJECT_SOURCE_DIR}/tests/clients)
  target_link_libraries(judge_bench PRIVATE tea_trials tea_core tea_spdlog tea_bwrap_harness tea_warnings)
  target_compile_definitions(judge_bench PRIVATE
    TEA_MESSAGES_API_MOCK="${PROJECT_SOURCE_DIR}/tests/clients/messages_api_mock.py"
    TEA_MAKE_TEST_PKI="${PROJECT_SOURCE_DIR}/tests/clients/make_test_pki.sh"
    TEA_BENCH_CLAUDE="/var/cache/tea-evaluate-deps/claude-code-2.1.332/bin/claude")
endif()
