# tea_gzipped(OUT FILE...): FILE compressed as Debian ships documentation (gzip -9n: no name, no
# time stamp, so the same bytes each time), written to the build tree when CMake configures; OUT
# lists the .gz files, for install(FILES). A changed FILE configures again.
function(tea_gzipped out)
  set(gzipped "")
  foreach(file IN LISTS ARGN)
    get_filename_component(name "${file}" NAME)
    set(gz "${CMAKE_CURRENT_BINARY_DIR}/gzipped/${name}.gz")
    file(MAKE_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/gzipped")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
    execute_process(COMMAND gzip -9n --stdout "${file}" OUTPUT_FILE "${gz}"
                    RESULT_VARIABLE status)
    if(NOT status EQUAL 0)
      message(FATAL_ERROR "gzip of ${file} failed: ${status}")
    endif()
    list(APPEND gzipped "${gz}")
  endforeach()
  set(${out} "${gzipped}" PARENT_SCOPE)
endfunction()
