# Included from bench/CMakeLists.txt: build_private_repository against `git clone --mirror`.
add_executable(private_repository_bench ${CMAKE_CURRENT_LIST_DIR}/private_repository_bench.cpp)
target_link_libraries(private_repository_bench PRIVATE tea_git tea_warnings)
