# Included from bench/CMakeLists.txt: the Seatbelt backend's profile per call (issue 39).
add_executable(seatbelt_bench ${CMAKE_CURRENT_LIST_DIR}/seatbelt_bench.cpp)
target_link_libraries(seatbelt_bench PRIVATE tea_seatbelt_profile tea_warnings)
