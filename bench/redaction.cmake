# Included from bench/CMakeLists.txt: throughput of the redaction of a login's secrets.
add_executable(redaction_bench ${CMAKE_CURRENT_LIST_DIR}/redaction_bench.cpp)
target_link_libraries(redaction_bench PRIVATE tea_redaction tea_warnings)
