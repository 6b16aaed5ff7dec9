# tea-shipped: every target an installation ships (the runtime, its helpers and modules, the
# plugins) and nothing else, so scripts/run-example.sh builds what the example runs and not the
# test suite. A shipped target is installed with tea_install_shipped (or tea_add_plugin, which
# calls it), which also adds it here: a target installed without being built by tea-shipped
# would be missing from the example's build and only found missing when the example runs.
add_custom_target(tea-shipped)

# tea_install_shipped(<target> <RUNTIME|LIBRARY> <destination> <component>)
function(tea_install_shipped target kind destination component)
  install(TARGETS ${target} ${kind} DESTINATION "${destination}" COMPONENT ${component})
  add_dependencies(tea-shipped ${target})
endfunction()

# Fails the configure when a CMakeLists.txt installs a target by hand rather than through
# tea_install_shipped. The SDK's library is the one exception: it is installed with its export
# set for find_package(TeaSdk), and every plugin links it, so tea-shipped builds it anyway.
function(tea_check_shipped)
  file(GLOB_RECURSE lists RELATIVE "${PROJECT_SOURCE_DIR}" "${PROJECT_SOURCE_DIR}/*/CMakeLists.txt"
       "${PROJECT_SOURCE_DIR}/cmake/*.cmake")
  foreach(list IN LISTS lists)
    if(list MATCHES "^build/" OR list STREQUAL "cmake/TeaShipped.cmake")
      continue()
    endif()
    file(STRINGS "${PROJECT_SOURCE_DIR}/${list}" lines REGEX "^[ \t]*install\\([ \t]*TARGETS")
    foreach(line IN LISTS lines)
      if(NOT (list STREQUAL "sdk/CMakeLists.txt" AND line MATCHES "TARGETS tea_sdk EXPORT"))
        message(FATAL_ERROR "${list}: '${line}' installs a target that tea-shipped would not "
                            "build; use tea_install_shipped (cmake/TeaShipped.cmake)")
      endif()
    endforeach()
  endforeach()
endfunction()
