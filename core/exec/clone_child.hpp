// A child that shares the runtime's memory (CLONE_VM), on a stack the caller lends it: the runner's
// spawn, the keeper of a call's mount namespace, the holder of a user namespace for an idmap.
#pragma once

#include <sanitizer/asan_interface.h>
#include <sched.h>
#include <signal.h>
#include <sys/types.h>

#include <cerrno>
#include <span>

namespace tea::exec {

// clone(fn, arg, flags) on `stack` with every signal blocked around it: no handler of the runtime
// may run in the child, on memory it shares. Returns the child, or -1 with errno set.
inline pid_t clone_sharing_memory(int (*fn)(void *), void *arg, int flags, std::span<char> stack) {
    sigset_t all;
    sigset_t previous;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &previous);
    const pid_t pid = ::clone(fn, stack.data() + stack.size(), flags, arg);
    const int clone_error = errno;
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    errno = clone_error;
    return pid;
}

// Once the child is done with `stack` (exited, or exec'd under CLONE_VFORK): under
// AddressSanitizer its frames left their marks there, which the caller's later calls reuse;
// cleared (a no-op in other builds).
inline void stack_returned(std::span<char> stack) {
    ASAN_UNPOISON_MEMORY_REGION(stack.data(), stack.size());
}

}  // namespace tea::exec
