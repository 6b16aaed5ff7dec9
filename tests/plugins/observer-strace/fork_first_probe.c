// fork_first_probe FILE: a static program without a C library whose first call is a fork; the
// child copies FILE's first bytes to stderr. Its own process makes no other call than waiting.
// x86_64 only.

static long call(long nr, long a, long b, long c) {
    long ret = 0;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c)
                     : "rcx", "r11", "memory");
    return ret;
}

enum { kRead = 0, kWrite = 1, kFork = 57, kWait4 = 61, kExitGroup = 231, kOpenat = 257 };

__attribute__((used)) void fork_first_main(long *stack) {
    char **argv = (char **)(stack + 1);
    const long child = call(kFork, 0, 0, 0);
    if (child == 0) {
        char buf[256];
        const long fd = call(kOpenat, -100 /* AT_FDCWD */, (long)argv[1], 0 /* O_RDONLY */);
        const long n = fd < 0 ? 0 : call(kRead, fd, (long)buf, (long)sizeof buf);
        if (n > 0) {
            call(kWrite, 2, (long)buf, n);
        }
        call(kExitGroup, 0, 0, 0);
    }
    call(kWait4, child, 0, 0);
    call(kExitGroup, 0, 0, 0);
}

__asm__(".globl _start\n_start:\n mov %rsp, %rdi\n and $-16, %rsp\n call fork_first_main\n hlt\n");
