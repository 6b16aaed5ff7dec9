/* A target that makes the memory budget's OOM killer end the audit's tracer (audit_evasion_test).
 *
 * It fills the tmpfs file systems of its call (/dev/shm, its temp directory, /tmp, /var/tmp) from
 * a child: tmpfs pages belong to no process, so the probe's own processes stay small (it is
 * static) and the largest process of the call's cgroup is the tracer. strace 6.1 leaves its
 * tracees running when it is killed. The probe times a traced call (an open of a path that does
 * not exist) until it costs a quarter of the least it cost at the start, three times in a row: from
 * then on nothing traces it, and it prints UNTRACED, frees the tmpfs and reads argv[1], printing
 * READ:<first line>. argv[2], when given, is the pause in microseconds between two timings. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double traced_call_ns(void) {
    struct timespec a;
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    const int fd = open("/nonexistent-tea-oom-probe", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        return 2;
    }
    const long pause_us = argc > 2 ? atol(argv[2]) : 0;
    double traced = 1e18;
    for (int i = 0; i < 1000; ++i) {
        const double t = traced_call_ns();
        traced = t < traced ? t : traced;
    }
    const char *tmpdir = getenv("TMPDIR");
    const char *dirs[4] = {"/dev/shm", tmpdir != NULL ? tmpdir : "/tmp", "/tmp", "/var/tmp"};
    int fills[4];
    for (int d = 0; d < 4; ++d) {
        char path[512];
        snprintf(path, sizeof path, "%s/tea-oom-fill", dirs[d]);
        fills[d] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    }
    const pid_t filler = fork();
    if (filler == 0) {
        static char block[1 << 16];
        memset(block, 'x', sizeof block);
        for (int d = 0; d < 4; ++d) {
            /* Slowly, so that what the tracer freed lasts a few milliseconds. */
            while (fills[d] >= 0 && write(fills[d], block, sizeof block) > 0) {
                usleep(100);
            }
        }
        _exit(0);
    }
    for (;;) {
        if (waitpid(filler, NULL, WNOHANG) == filler) {
            printf("FILLED\n"); /* every tmpfs full and nothing ended: no budget held it */
            return 1;
        }
        if (pause_us > 0) {
            usleep((useconds_t)pause_us);
        }
        int fast = 0;
        while (fast < 3 && traced_call_ns() * 4 < traced) {
            ++fast;
        }
        if (fast == 3) {
            kill(filler, SIGKILL);
            for (int d = 0; d < 4; ++d) {
                if (fills[d] >= 0 && ftruncate(fills[d], 0) != 0) {
                    fills[d] = -1;
                }
            }
            printf("UNTRACED\n");
            fflush(stdout);
            char key[256] = {0};
            const int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
            const ssize_t n = fd >= 0 ? read(fd, key, sizeof key - 1) : -1;
            if (n > 0) {
                key[strcspn(key, "\n")] = '\0';
                printf("READ:%s\n", key);
            } else {
                printf("READ-FAILED:%s\n", strerror(errno));
            }
            fflush(stdout);
            return 0;
        }
    }
}
