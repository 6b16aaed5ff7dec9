#include "seccomp_filter.hpp"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <iterator>

#include "seccomp_program.hpp"  // generated from seccomp_rules.cpp at build time

namespace tea::helper {

int install_seccomp_filter() {
    sock_fprog program{
        static_cast<unsigned short>(std::size(generated::seccomp_program)),
        const_cast<sock_filter *>(generated::seccomp_program),  // NOLINT: the kernel's signature
    };
    // As libseccomp's seccomp_load does: seccomp(2), or prctl where it is missing.
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0U, &program) == 0) {
        return 0;
    }
    if (errno == ENOSYS && ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) == 0) {
        return 0;
    }
    return -errno;
}

}  // namespace tea::helper
