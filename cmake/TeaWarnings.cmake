# Warnings as errors for every target of the project (not for dependencies).
add_library(tea_warnings INTERFACE)
target_compile_options(tea_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wnon-virtual-dtor
  -Wold-style-cast -Wcast-align -Wdouble-promotion -Wformat=2
  -Wimplicit-fallthrough)
if(TEA_WERROR)
  target_compile_options(tea_warnings INTERFACE -Werror)
endif()
if(TEA_SANITIZE)
  add_compile_options(-fsanitize=${TEA_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TEA_SANITIZE})
  # Sanitized executables are linked at a fixed address: as position-independent executables
  # their millions of relocations (the sanitizers' metadata) cost each start of a test or of the
  # runtime most of a second. The release build stays position-independent.
  string(APPEND CMAKE_EXE_LINKER_FLAGS " -no-pie")
endif()
# C sources (the ABI fixture, the layout test) cannot take the C++-only flags.
add_library(tea_c_warnings INTERFACE)
target_compile_options(tea_c_warnings INTERFACE -Wall -Wextra -Wpedantic $<$<BOOL:${TEA_WERROR}>:-Werror>)
