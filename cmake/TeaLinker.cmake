# The linker of the sanitized build. GNU gold links its executables in about half the time of the
# default (bench/README.md, "What the test command costs"): that build links some ninety test
# executables, each carrying the sanitizers' metadata. Other builds keep the default, whose
# -z pack-relative-relocs (which gold lacks) the installed runtime and plugins are linked with.
# TEA_LINKER names another linker (-fuse-ld=...) or "default".
if(TEA_SANITIZE)
  set(TEA_LINKER "gold" CACHE STRING "The linker passed as -fuse-ld, or \"default\"")
else()
  set(TEA_LINKER "default" CACHE STRING "The linker passed as -fuse-ld, or \"default\"")
endif()
if(NOT TEA_LINKER STREQUAL "default")
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=${TEA_LINKER}" TEA_LINKER_WORKS_${TEA_LINKER})
  if(TEA_LINKER_WORKS_${TEA_LINKER})
    add_link_options("-fuse-ld=${TEA_LINKER}")
  else()
    message(STATUS "The linker ${TEA_LINKER} does not work here: the toolchain's default links")
  endif()
endif()
