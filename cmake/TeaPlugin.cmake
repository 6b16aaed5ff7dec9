# tea_add_plugin(NAME <name> KIND <kind> ABI <major.minor> SOURCES ...)
# Builds lib/tea-evaluate/plugins/libtea-<kind>-<name>.so and writes its
# manifest lib/tea-evaluate/plugins.d/<name>.toml, in the build tree and on install.
# ABI is the minor the plugin implements, the one its descriptor declares (TEA_ABI_1_m):
# the loader refuses a manifest that says otherwise.
function(tea_add_plugin)
  cmake_parse_arguments(P "" "NAME;KIND;ABI;COMPONENT" "SOURCES;LIBRARIES" ${ARGN})
  string(REGEX REPLACE "^[0-9]+\\." "" abi_minor "${P_ABI}")
  if(NOT P_ABI MATCHES "^${TEA_ABI_MAJOR_VALUE}\\.[0-9]+$" OR abi_minor GREATER TEA_ABI_MINOR_VALUE)
    message(FATAL_ERROR "tea_add_plugin(${P_NAME}): ABI must be the minor the plugin implements, "
                        "${TEA_ABI_MAJOR_VALUE}.0 to ${TEA_ABI_VERSION} (found '${P_ABI}')")
  endif()
  set(target "tea-${P_KIND}-${P_NAME}")
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE tea_sdk tea_warnings ${P_LIBRARIES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/${TEA_PLUGIN_LIBDIR}"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  # Plugins resolve every symbol at link time: an undefined one is a build error, not a load error.
  target_link_options(${target} PRIVATE ${TEA_LINK_NO_UNDEFINED})
  # Each plugin carries its own libstdc++, hidden (--exclude-libs), so loading one
  # does not load libstdc++.so: no C++ type crosses the plugin boundary.
  if(NOT TEA_SANITIZE)
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc -Wl,--exclude-libs,ALL
                        -Wl,-z,pack-relative-relocs -Wl,--as-needed -Wl,-O1)
  endif()
  set(TEA_MANIFEST_NAME "${P_NAME}")
  set(TEA_MANIFEST_KIND "${P_KIND}")
  set(TEA_MANIFEST_LIBRARY "lib${target}.so")
  set(TEA_ABI_VERSION "${P_ABI}")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/plugin-manifest.toml.in"
                 "${CMAKE_BINARY_DIR}/${TEA_PLUGIN_MANIFESTDIR}/${P_NAME}.toml" @ONLY)
  if(NOT P_COMPONENT)
    set(P_COMPONENT "plugin-${P_NAME}")
  endif()
  set_property(GLOBAL APPEND PROPERTY TEA_PLUGIN_COMPONENTS ${P_COMPONENT})
  tea_install_shipped(${target} LIBRARY "${TEA_PLUGIN_LIBDIR}" ${P_COMPONENT})
  install(FILES "${CMAKE_BINARY_DIR}/${TEA_PLUGIN_MANIFESTDIR}/${P_NAME}.toml"
          DESTINATION "${TEA_PLUGIN_MANIFESTDIR}" COMPONENT ${P_COMPONENT})
endfunction()
