// The observers of this build that a test runs a real call under: strace always, the eBPF
// observer as root (its programs load for root alone), the seccomp observer for any user; each
// where its plugin is built, which tea_test_each_observer (tests/CMakeLists.txt) tells the test
// with TEA_EBPF_OBSERVER and TEA_SECCOMP_OBSERVER.
#pragma once

#include <unistd.h>

#include <vector>

namespace tea::test {

inline std::vector<const char *> observers_of_the_build() {
    std::vector<const char *> out{"strace"};
#ifdef TEA_EBPF_OBSERVER
    if (::geteuid() == 0) {
        out.push_back("ebpf");
    }
#endif
#ifdef TEA_SECCOMP_OBSERVER
    out.push_back("seccomp");
#endif
    return out;
}

}  // namespace tea::test
