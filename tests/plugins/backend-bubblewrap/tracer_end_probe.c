/* A target that runs on once the audit's tracer has ended (audit_evasion_test), and says so.
 *
 * It makes a traced call (an open of a path that does not exist) until the call answers ENOSYS:
 * strace's own filter answers so once no tracer serves it, and only then (a timing of the call
 * would also take a machine that was busy and no longer is for a tracer gone). It prints
 * UNTRACED, frees what it filled and reads argv[1], printing READ:<first line> or
 * READ-FAILED:<error>.
 *
 * argv[2] is the pause in microseconds between two timings; argv[3] what it does meanwhile:
 * "fill" fills the tmpfs file systems of its call (/dev/shm, its temp directory, /tmp, /var/tmp)
 * from a child, so that the memory budget's OOM killer ends a process: tmpfs pages belong to no
 * process, so the probe's own stay small (it is static) and the largest process of the call's
 * cgroup is the tracer. "wait" ignores SIGTERM, so that a timeout ends it only at the end of its
 * grace, with SIGKILL. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Whether the traced call went untraced: strace's filter answers ENOSYS without its tracer. */
static int untraced(void) {
    const int fd = open("/nonexistent-tea-oom-probe", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    return errno == ENOSYS;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        return 2;
    }
    const long pause_us = argc > 2 ? atol(argv[2]) : 0;
    const int fill = argc <= 3 || strcmp(argv[3], "fill") == 0;
    if (!fill) {
        signal(SIGTERM, SIG_IGN);
    }
    const char *tmpdir = getenv("TMPDIR");
    const char *dirs[4] = {"/dev/shm", tmpdir != NULL ? tmpdir : "/tmp", "/tmp", "/var/tmp"};
    int fills[4] = {-1, -1, -1, -1};
    for (int d = 0; fill && d < 4; ++d) {
        char path[512];
        snprintf(path, sizeof path, "%s/tea-oom-fill", dirs[d]);
        fills[d] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    }
    const pid_t filler = fill ? fork() : -1;
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
        if (filler > 0 && waitpid(filler, NULL, WNOHANG) == filler) {
            printf("FILLED\n"); /* every tmpfs full and nothing ended: no budget held it */
            return 1;
        }
        if (pause_us > 0) {
            usleep((useconds_t)pause_us);
        }
        if (untraced()) {
            if (filler > 0) {
                kill(filler, SIGKILL);
            }
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
