#pragma once
// Whether this test executable was built with AddressSanitizer, where every process a test starts
// takes several times as long to start, and a call with it. Tests that repeat a race or a kill many
// times to reach the rare case repeat it fewer times there: the release build keeps the full count,
// and the sanitized one still runs each path that the repetitions vary.

#include <algorithm>

namespace tea::test {

// GCC says so with __SANITIZE_ADDRESS__, Clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool sanitized = true;
#elif defined(__has_feature)
inline constexpr bool sanitized = __has_feature(address_sanitizer);
#else
inline constexpr bool sanitized = false;
#endif

// `full` in the release build; a quarter of it, at least one, in the sanitized build.
constexpr int repetitions(int full) {
    return sanitized ? std::max(1, full / 4) : full;
}

}  // namespace tea::test
