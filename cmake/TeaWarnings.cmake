# Warnings as errors for every target of the project (not for dependencies).
add_library(tea_warnings INTERFACE)
target_compile_options(tea_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wnon-virtual-dtor
  -Wold-style-cast -Wcast-align -Wdouble-promotion -Wformat=2
  -Wimplicit-fallthrough)
if(TEA_WERROR)
  target_compile_options(tea_warnings INTERFACE -Werror)
endif()
# The asan preset builds with Clang: it compiles the unoptimised, instrumented code faster than
# GCC, and does not instrument its per-check metadata as globals, which a sanitized process
# would register and scan at every start (bench/README.md, "What the test command costs").
if(TEA_SANITIZE)
  add_compile_options(-fsanitize=${TEA_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TEA_SANITIZE})
  # Sanitized executables are linked at a fixed address: as position-independent executables
  # their millions of relocations (the sanitizers' metadata) cost each start of a test or of the
  # runtime most of a second. The release build stays position-independent.
  string(APPEND CMAKE_EXE_LINKER_FLAGS " -no-pie")
endif()
# Shared objects of the project resolve every symbol at link time: an undefined one is a build
# error, not a load error. Not under Clang's sanitizers, whose runtime is linked into the
# executable that loads them (GCC's is a shared library each object names).
if(TEA_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(TEA_LINK_NO_UNDEFINED "")
else()
  set(TEA_LINK_NO_UNDEFINED "-Wl,--no-undefined")
endif()
# C sources (the ABI fixture, the layout test) cannot take the C++-only flags.
add_library(tea_c_warnings INTERFACE)
target_compile_options(tea_c_warnings INTERFACE -Wall -Wextra -Wpedantic $<$<BOOL:${TEA_WERROR}>:-Werror>)
