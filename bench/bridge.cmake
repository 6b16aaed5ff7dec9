# The bridge into a started service (host listener and tea-bridge-relay) against direct loopback
# connections to the same server. Built when the bubblewrap backend, which builds the relay, is.
if(TARGET tea-bridge-relay)
  add_executable(bridge_bench ${CMAKE_CURRENT_LIST_DIR}/bridge_bench.cpp)
  target_link_libraries(bridge_bench PRIVATE tea_core tea_warnings)
  target_compile_definitions(bridge_bench PRIVATE
    TEA_BRIDGE_RELAY="$<TARGET_FILE:tea-bridge-relay>")
  add_dependencies(bridge_bench tea-bridge-relay)
endif()
