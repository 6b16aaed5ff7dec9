// This process's memory as the kernel counts it, from /proc/self/status: for tests that a parser
// takes memory for what its input makes, not for what the input claims.
#pragma once

#include <cstddef>
#include <fstream>
#include <string>

namespace tea::test {

// The field of /proc/self/status in KiB, e.g. "VmHWM" (peak resident) or "VmPeak" (peak
// virtual); 0 when the field is absent.
inline std::size_t status_kib(const std::string &field) {
    std::ifstream status("/proc/self/status");
    std::string key;
    std::size_t value = 0;
    while (status >> key)
        if (key == field + ":" && status >> value) return value;
    return 0;
}

}  // namespace tea::test
