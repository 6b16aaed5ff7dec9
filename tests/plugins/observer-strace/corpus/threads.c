/* Corpus program: four threads open files at once through relative paths, after the main
 * thread changed directory. Threads share the working directory (CLONE_FS), so the parser must
 * resolve every thread's relative path against the directory the main thread chose. SYS_open
 * (where the architecture has it) takes no dirfd, so strace prints no directory for it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_barrier_t start;

static void *reader(void *arg) {
    const char *name = arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < 5; ++i) {
        int fd = openat(AT_FDCWD, name, O_RDONLY);
        if (fd >= 0) close(fd);
#ifdef SYS_open
        fd = (int)syscall(SYS_open, name, O_RDONLY);
        if (fd >= 0) close(fd);
#endif
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2 || chdir(argv[1]) != 0) return 2;
    const char *names[4] = {"a.txt", "sub/b.txt", "sub/deeper/c.txt", "missing.txt"};
    pthread_t threads[4];
    pthread_barrier_init(&start, NULL, 4);
    for (int i = 0; i < 4; ++i) pthread_create(&threads[i], NULL, reader, (void *)names[i]);
    for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
    return 0;
}
