# A fuzz target of one parser, built twice from the same source:
#  - <name>_replay, a plain program (TEA_FUZZ_REPLAY_MAIN, tests/support/fuzz_replay_main.hpp)
#    linked with REPLAY_LIBS, which ctest runs over the seed corpus in every build, so every
#    compiler and the sanitizer build exercise the target's checks;
#  - with Clang, <name> under libFuzzer, ASan and UBSan, with the parser's SOURCES compiled into
#    it so they are instrumented, which ctest runs for a bounded time, new inputs going to a
#    corpus in the build tree and the seed corpus in the source staying as it is.
#
# tea_fuzz_target(<name> SOURCE <fuzz.cpp> CORPUS <dir> MAX_LEN <bytes>
#                 REPLAY_LIBS <targets...> [SOURCES <files...>] [INCLUDES <dirs...>]
#                 [FUZZ_LIBS <libs...>])
function(tea_fuzz_target name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "SOURCE;CORPUS;MAX_LEN"
                        "REPLAY_LIBS;SOURCES;INCLUDES;FUZZ_LIBS")
  add_executable(${name}_replay ${arg_SOURCE})
  target_compile_definitions(${name}_replay PRIVATE TEA_FUZZ_REPLAY_MAIN)
  target_include_directories(${name}_replay PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name}_replay PRIVATE ${arg_REPLAY_LIBS} tea_warnings)
  add_test(NAME ${name}_corpus_replay COMMAND ${name}_replay ${arg_CORPUS})

  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    add_executable(${name} ${arg_SOURCE} ${arg_SOURCES})
    target_include_directories(${name} PRIVATE ${arg_INCLUDES})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined
                           -fno-sanitize-recover=all)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${name} PRIVATE ${arg_FUZZ_LIBS} tea_warnings)
    set(work ${CMAKE_CURRENT_BINARY_DIR}/${name}_corpus)
    file(MAKE_DIRECTORY ${work})
    add_test(NAME ${name}
             COMMAND ${name} -max_total_time=20 -max_len=${arg_MAX_LEN} -timeout=10
                     -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/ ${work} ${arg_CORPUS})
    set_tests_properties(${name} PROPERTIES TIMEOUT 90)
  endif()
endfunction()
