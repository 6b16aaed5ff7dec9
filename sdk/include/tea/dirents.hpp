// Reading a directory through its descriptor with getdents64, as the runtime and the plugins do
// when they walk trees a target or another user may have shaped: each entry's type comes with
// its name, so a walk costs no stat per entry and never resolves a path.
//
//   tea::dirents::for_each(fd, [&](const dirent64 &entry) { ...; return true; });
#ifndef TEA_DIRENTS_HPP
#define TEA_DIRENTS_HPP

#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <string_view>

namespace tea::dirents {

// Calls visit(entry) for each entry of the directory open as `dir` but "." and "..", from the
// descriptor's offset on, until visit returns false or the directory ends. Returns false when
// the directory could not be read (the entries before were visited).
template <typename Visit>
bool for_each(int dir, Visit &&visit) {
    // Left uninitialised: getdents64 fills it. 32 KiB: a directory of ten thousand entries
    // takes a few calls, not forty.
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init)
    alignas(dirent64) std::array<char, 32768> buffer;
    for (;;) {
        const auto n = ::syscall(SYS_getdents64, dir, buffer.data(), buffer.size());
        if (n <= 0) {
            return n == 0;
        }
        for (long offset = 0; offset < n;) {
            const auto *entry = reinterpret_cast<const dirent64 *>(  // NOLINT: the kernel's layout
                buffer.data() + offset);
            offset += entry->d_reclen;
            const std::string_view name{entry->d_name};
            if (name == "." || name == "..") {
                continue;
            }
            if (!visit(*entry)) {
                return true;
            }
        }
    }
}

}  // namespace tea::dirents

#endif  // TEA_DIRENTS_HPP
