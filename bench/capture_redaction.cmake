# Included from bench/CMakeLists.txt: what redacting a call's output as it is captured costs.
add_executable(capture_redaction_bench ${CMAKE_CURRENT_LIST_DIR}/capture_redaction_bench.cpp)
target_link_libraries(capture_redaction_bench PRIVATE tea_core tea_redaction tea_warnings)
