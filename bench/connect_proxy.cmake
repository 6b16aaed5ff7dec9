# The egress CONNECT proxy against direct connections to the same loopback server
# (throughput and per-connection latency). Built when the egress-connect plugin is.
if(TARGET tea_connect_proxy)
  add_executable(connect_proxy_bench ${CMAKE_CURRENT_LIST_DIR}/connect_proxy_bench.cpp)
  target_link_libraries(connect_proxy_bench PRIVATE tea_connect_proxy tea_warnings)
endif()
