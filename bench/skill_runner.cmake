# Included from bench/CMakeLists.txt: tea-skill-runner's own cost around an agent, against the same
# fake agent run directly.
add_executable(skill_runner_bench ${CMAKE_CURRENT_LIST_DIR}/skill_runner_bench.cpp)
target_link_libraries(skill_runner_bench PRIVATE tea_warnings)
target_compile_definitions(skill_runner_bench PRIVATE
  TEA_SKILL_RUNNER_BIN="$<TARGET_FILE:tea-skill-runner>")
add_dependencies(skill_runner_bench tea-skill-runner)
