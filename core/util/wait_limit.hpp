// The longest the runtime waits on a call's behalf.
#pragma once

#include <cstdint>

namespace tea {

// A call's timeout, and the kill grace after it, are each at most this many milliseconds (about
// 31 years): the latest moment a call can reach, its start plus both, then stays well inside the
// steady clock's range (292 years of nanoseconds from boot) whatever the host's uptime, where a
// deadline past it would wrap into the past and end the call at once. Longer values are refused
// where they are read, naming the option or the key.
constexpr std::int64_t max_wait_ms = 1'000'000'000'000;

}  // namespace tea
