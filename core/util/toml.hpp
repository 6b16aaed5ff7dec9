// toml++, compiled into the runtime from its headers (see the top CMakeLists.txt).
#pragma once

// The parser's internal assertions stay off in every build type, as in the
// distribution's shared library (built with NDEBUG): a debug build must not
// abort on hostile configuration text that a release build reports as a
// parse error.
#ifndef TOML_ASSERT
#define TOML_ASSERT(expr) static_cast<void>(0)
#endif
#include <toml++/toml.h>
