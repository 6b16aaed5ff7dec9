/* The accesses the eBPF observer's kernel tests make, each one way a target could reach a file:
 *
 *   open PATH             a plain open and read (the control)
 *   opath PATH            an O_PATH open alone: names the file, reads nothing
 *   procfd PATH           an O_PATH open, then an open of /proc/self/fd/N: reads the file
 *   execveat PROGRAM      runs PROGRAM through execveat(fd, "", AT_EMPTY_PATH)
 *   int80 PATH            opens PATH through the i386 ABI (int 0x80) from 64-bit code
 *   highbits PATH         opens PATH with openat's number with bit 32 set and a descriptor
 *                         argument with high bits set: the kernel runs the low 32 bits of each
 *   io_uring PATH         opens PATH with an io_uring IORING_OP_OPENAT, no open system call
 *   opens PATH N          opens and closes PATH N times, then reads it once
 *   threads PATH N        two threads (so their descriptor table is shared) each open and close
 *                         PATH N times in bursts of 50 with 5 ms between bursts, then it reads
 *                         PATH once
 *   outlive PATH          forks a child that outlives the probe: the probe prints the child's
 *                         pid and ends; the child leaves the probe's output, opens PATH and
 *                         waits to be killed
 *   dropped FIFO D        opens FIFO by a path in a page of its own, which another thread drops
 *                         (when D is 1) while the open waits for a writer, then writes; prints
 *                         whether the open succeeded
 *   x32 PATH              opens PATH through the x32 ABI (the number's bit 30 set)
 *   unfaulted PATH        opens PATH by a string in a page the probe has never touched (a
 *                         memfd's page, mapped and handed to open as is)
 *   handle PATH           opens PATH by its file handle (name_to_handle_at, open_by_handle_at)
 *   storm PATH N          forks N children at once, each opening PATH; prints how many read it
 *   racer A B N           one thread flips the path buffer between A and B (same length,
 *                         differing in their last byte) while another opens it N times; prints
 *                         how many opens reached A and B, checked by inode
 *   swap HOW DIR DECOY N  opens DIR/secret-0 ... DIR/secret-<N-1> one after another through one
 *                         path buffer, while a sibling thread puts DECOY on the number each open
 *                         returns and rewrites the buffer to DECOY's path, racing the observer's
 *                         read of the descriptor at the open's return. HOW: "dup2" (it waits for
 *                         the number, copies it, dup2s the decoy over it), "close" (copies it,
 *                         closes it, dups the decoy onto it) or "blind" (closes the number over
 *                         and over until a close lands, then dups the decoy onto it). Prints how
 *                         many opens the sibling swapped
 *   inflight HOW FIFO FILE
 *                         opens FILE, then FIFO for reading; while that open waits for a writer,
 *                         a sibling thread takes a number away: "close" closes FILE's
 *                         descriptor, "close_range" closes it with close_range, "dup2" dup2s it
 *                         onto a number nothing held, "none" does nothing; then it opens the
 *                         writer's end. Prints "fifo=N" with the number the open returned
 *
 * It prints what it read, so a test sees the access happened. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int show(int fd) {
    if (fd < 0) {
        perror("open");
        return 1;
    }
    char buf[256];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
        fwrite(buf, 1, (size_t)n, stdout);
    }
    close(fd);
    return n >= 0 ? 0 : 1;
}

static int int80_open(const char *path) {
    /* The i386 ABI takes 32-bit pointers: the path must lie below 4 GiB. */
    char *low =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    if (low == MAP_FAILED) {
        perror("mmap");
        return -1;
    }
    strncpy(low, path, 4095);
    long ret = 5; /* i386 open; the kernel clears r8 to r11 on the way back */
    __asm__ volatile("int $0x80"
                     : "+a"(ret)
                     : "b"((uint32_t)(uintptr_t)low), "c"(O_RDONLY), "d"(0)
                     : "memory", "r8", "r9", "r10", "r11");
    return (int)ret;
}

static int uring_open(const char *path) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    const int ring = (int)syscall(SYS_io_uring_setup, 4, &p);
    if (ring < 0) {
        perror("io_uring_setup");
        return -1;
    }
    const size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    const size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(NULL, sq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
                    IORING_OFF_SQ_RING);
    char *cq = mmap(NULL, cq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
                    IORING_OFF_CQ_RING);
    struct io_uring_sqe *sqes =
        mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
        perror("mmap");
        return -1;
    }
    unsigned *tail = (unsigned *)(sq + p.sq_off.tail);
    unsigned *mask = (unsigned *)(sq + p.sq_off.ring_mask);
    unsigned *array = (unsigned *)(sq + p.sq_off.array);
    const unsigned index = *tail & *mask;
    struct io_uring_sqe *sqe = &sqes[index];
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = IORING_OP_OPENAT;
    sqe->fd = AT_FDCWD;
    sqe->addr = (uint64_t)(uintptr_t)path;
    sqe->open_flags = O_RDONLY;
    array[index] = index;
    atomic_store_explicit((_Atomic unsigned *)tail, *tail + 1, memory_order_release);
    if (syscall(SYS_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
        perror("io_uring_enter");
        return -1;
    }
    unsigned *head = (unsigned *)(cq + p.cq_off.head);
    struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    const unsigned cmask = *(unsigned *)(cq + p.cq_off.ring_mask);
    const int res = cqes[*head & cmask].res;
    *head += 1;
    return res;
}

static char race_path[4096];
static atomic_int racing = 1;

static void *flipper(void *arg) {
    const char *flips = arg; /* the two last bytes */
    const size_t last = strlen(race_path) - 1;
    while (atomic_load_explicit(&racing, memory_order_relaxed)) {
        race_path[last] = flips[0];
        race_path[last] = flips[1];
    }
    return NULL;
}

static char *unmap_page;
static const char *fifo_path;
static pid_t opener;
static int drop_page;
static atomic_int open_returned;

/* Whether thread `tid` sleeps in openat (number 257). */
static int sleeps_in_open(pid_t tid) {
    char name[64];
    char text[512] = {0};
    snprintf(name, sizeof name, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(name, "r");
    if (f == NULL) return 0;
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *state = strrchr(text, ')');
    if (state == NULL || state[2] != 'S') return 0;
    snprintf(name, sizeof name, "/proc/self/task/%d/syscall", (int)tid);
    f = fopen(name, "r");
    if (f == NULL) return 0;
    int nr = -1;
    const int got = fscanf(f, "%d", &nr);
    fclose(f);
    return got == 1 && nr == 257;
}

static void *page_dropper(void *arg) {
    (void)arg;
    while (!sleeps_in_open(opener)) {
        sched_yield();
    }
    if (drop_page) {
        madvise(unmap_page, 4096, MADV_DONTNEED);
    }
    close(open(fifo_path, O_WRONLY));
    /* Alive until the open has returned: the table stays shared while the observer reads it. */
    while (!atomic_load(&open_returned)) {
        sched_yield();
    }
    return NULL;
}

/* Opens FIFO by a path that lies in a shared mapping of a memfd. While the open waits for a
 * writer, the kernel's own copy of the path is taken; another thread then drops the page (when
 * DROP is 1: its content is kept, but a read that may not fault, as the observer's when the open
 * returns, finds no page) and opens the writer's end. */
static int dropped(const char *fifo, int drop) {
    const int memfd = memfd_create("path", 0);
    if (memfd < 0 || ftruncate(memfd, 4096) != 0 ||
        pwrite(memfd, fifo, strlen(fifo) + 1, 0) != (ssize_t)(strlen(fifo) + 1)) {
        perror("memfd");
        return 1;
    }
    unmap_page = mmap(NULL, 4096, PROT_READ, MAP_SHARED, memfd, 0);
    if (unmap_page == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    fifo_path = fifo;
    opener = (pid_t)syscall(SYS_gettid);
    drop_page = drop;
    /* Faulted in first, so that the open sleeps only where it waits for the writer. */
    const volatile char first = unmap_page[0];
    (void)first;
    pthread_t t;
    pthread_create(&t, NULL, page_dropper, NULL);
    const int fd = open(unmap_page, O_RDONLY);
    atomic_store(&open_returned, 1);
    pthread_join(t, NULL);
    printf("opened=%d\n", fd >= 0);
    return 0;
}

static const char *burst_path;
static int burst_opens;

static void *burst_opener(void *unused) {
    (void)unused;
    for (int i = 0; i < burst_opens; ++i) {
        close(open(burst_path, O_RDONLY));
        if (i % 50 == 49) {
            usleep(5000);
        }
    }
    return NULL;
}

static int threads(const char *path, int n) {
    burst_path = path;
    burst_opens = n;
    pthread_t t[2];
    for (int i = 0; i < 2; ++i) {
        pthread_create(&t[i], NULL, burst_opener, NULL);
    }
    for (int i = 0; i < 2; ++i) {
        pthread_join(t[i], NULL);
    }
    return show(open(path, O_RDONLY));
}

static int racer(const char *a, const char *b, int n) {
    struct stat sa;
    struct stat sb;
    if (strlen(a) != strlen(b) || strlen(a) >= sizeof race_path || stat(a, &sa) != 0 ||
        stat(b, &sb) != 0) {
        fputs("racer: two existing paths of the same length\n", stderr);
        return 2;
    }
    strcpy(race_path, a);
    const char flips[2] = {a[strlen(a) - 1], b[strlen(b) - 1]};
    pthread_t t;
    pthread_create(&t, NULL, flipper, (void *)flips);
    int reached_a = 0;
    int reached_b = 0;
    int other = 0;
    for (int i = 0; i < n; ++i) {
        const int fd = open(race_path, O_RDONLY);
        if (fd < 0) {
            ++other;
            continue;
        }
        struct stat s;
        fstat(fd, &s);
        if (s.st_ino == sa.st_ino && s.st_dev == sa.st_dev) {
            ++reached_a;
        } else if (s.st_ino == sb.st_ino && s.st_dev == sb.st_dev) {
            ++reached_b;
        } else {
            ++other;
        }
        close(fd);
    }
    atomic_store(&racing, 0);
    pthread_join(t, NULL);
    printf("a=%d b=%d other=%d\n", reached_a, reached_b, other);
    return 0;
}

static char swap_path[4096];
static const char *swap_decoy;
static int swap_how; /* 0 dup2, 1 close, 2 blind */
static int swap_slot;
static int swap_decoy_fd;
static atomic_int swap_phase; /* 0 idle, 1 an open is on its way, 2 swapped, 3 stop */
static int swapped;

static void *swapper(void *arg) {
    (void)arg;
    for (;;) {
        const int phase = atomic_load(&swap_phase);
        if (phase == 3) return NULL;
        if (phase != 1) continue;
        if (swap_how == 2) {
            if (close(swap_slot) != 0) continue;
            strcpy(swap_path, swap_decoy);
            if (dup(swap_decoy_fd) != swap_slot) return NULL;
        } else {
            const int copy = dup(swap_slot);
            if (copy < 0) continue;
            strcpy(swap_path, swap_decoy);
            if (swap_how == 0) {
                dup2(swap_decoy_fd, swap_slot);
            } else {
                close(swap_slot);
                if (dup(swap_decoy_fd) != swap_slot) return NULL;
            }
            close(copy);
        }
        ++swapped;
        atomic_store(&swap_phase, 2);
    }
}

static int swap(const char *how, const char *dir, const char *decoy, int n) {
    swap_how = strcmp(how, "dup2") == 0 ? 0 : strcmp(how, "close") == 0 ? 1 : 2;
    swap_decoy = decoy;
    swap_decoy_fd = open(decoy, O_RDONLY);
    if (swap_decoy_fd < 0 || strlen(dir) + 32 > sizeof swap_path) return 2;
    /* The lowest free number: what each open returns. */
    swap_slot = dup(swap_decoy_fd);
    close(swap_slot);
    pthread_t t;
    pthread_create(&t, NULL, swapper, NULL);
    for (int i = 0; i < n; ++i) {
        snprintf(swap_path, sizeof swap_path, "%s/secret-%d", dir, i);
        atomic_store(&swap_phase, 1);
        if (open(swap_path, O_RDONLY) != swap_slot) break;
        while (atomic_load(&swap_phase) != 2) {
        }
        close(swap_slot);
        atomic_store(&swap_phase, 0);
    }
    atomic_store(&swap_phase, 3);
    pthread_join(t, NULL);
    printf("swapped=%d\n", swapped);
    return 0;
}

static const char *inflight_how;
static int inflight_fd;

static void *taker(void *arg) {
    (void)arg;
    while (!sleeps_in_open(opener)) {
        sched_yield();
    }
    if (strcmp(inflight_how, "close") == 0) {
        close(inflight_fd);
    } else if (strcmp(inflight_how, "close_range") == 0) {
        syscall(SYS_close_range, inflight_fd, inflight_fd, 0);
    } else if (strcmp(inflight_how, "dup2") == 0) {
        dup2(inflight_fd, 900);
    }
    close(open(fifo_path, O_WRONLY));
    while (!atomic_load(&open_returned)) {
        sched_yield();
    }
    return NULL;
}

static int inflight(const char *how, const char *fifo, const char *file) {
    inflight_how = how;
    fifo_path = fifo;
    inflight_fd = open(file, O_RDONLY);
    if (inflight_fd < 0) return 2;
    opener = (pid_t)syscall(SYS_gettid);
    pthread_t t;
    pthread_create(&t, NULL, taker, NULL);
    const int fd = open(fifo, O_RDONLY);
    atomic_store(&open_returned, 1);
    pthread_join(t, NULL);
    printf("fifo=%d\n", fd);
    return 0;
}

static int outlive(const char *path) {
    int ready[2];
    if (pipe(ready) != 0) {
        perror("pipe");
        return 1;
    }
    const pid_t child = fork();
    if (child == 0) {
        /* Off the probe's output, so that whoever reads it sees it end with the probe. */
        const int null = open("/dev/null", O_RDWR);
        dup2(null, 1);
        dup2(null, 2);
        close(ready[0]);
        const int fd = open(path, O_RDONLY);
        close(ready[1]);
        for (;;) {
            pause();
        }
        return fd;
    }
    close(ready[1]);
    char byte;
    (void)read(ready[0], &byte, 1); /* the child has opened PATH */
    printf("%d\n", (int)child);
    return child > 0 ? 0 : 1;
}

static int unfaulted(const char *path) {
    const int mfd = (int)syscall(SYS_memfd_create, "probe-path", 0);
    const size_t size = strlen(path) + 1;
    if (mfd < 0 || write(mfd, path, size) != (ssize_t)size) {
        perror("memfd");
        return 1;
    }
    /* Mapped, never read or written here: the open's copy is its first touch. */
    const char *page = mmap(NULL, 4096, PROT_READ, MAP_SHARED, mfd, 0);
    if (page == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    return show(open(page, O_RDONLY));
}

static int handle_open(const char *path) {
    struct {
        struct file_handle h;
        unsigned char bytes[MAX_HANDLE_SZ];
    } fh;
    fh.h.handle_bytes = MAX_HANDLE_SZ;
    int mount_id = 0;
    if (name_to_handle_at(AT_FDCWD, path, &fh.h, &mount_id, 0) != 0) {
        perror("name_to_handle_at");
        return -1;
    }
    const int mount_fd = open("/", O_RDONLY | O_DIRECTORY);
    return open_by_handle_at(mount_fd, &fh.h, O_RDONLY);
}

static int storm(const char *path, int n) {
    for (int i = 0; i < n; ++i) {
        const pid_t child = fork();
        if (child == 0) {
            const int fd = open(path, O_RDONLY);
            char byte;
            _exit(fd >= 0 && read(fd, &byte, 1) == 1 ? 0 : 1);
        }
    }
    int read_it = 0;
    int status = 0;
    while (wait(&status) > 0) {
        read_it += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    printf("read=%d\n", read_it);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fputs("usage: kernel_probe MODE ARG...\n", stderr);
        return 2;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "open") == 0) {
        return show(open(argv[2], O_RDONLY));
    }
    if (strcmp(mode, "opath") == 0) {
        return open(argv[2], O_PATH) >= 0 ? 0 : 1;
    }
    if (strcmp(mode, "procfd") == 0) {
        const int fd = open(argv[2], O_PATH);
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        return show(open(link, O_RDONLY));
    }
    if (strcmp(mode, "execveat") == 0) {
        const int fd = open(argv[2], O_RDONLY);
        char *const args[] = {"probe-exec", NULL};
        char *const env[] = {NULL};
        syscall(SYS_execveat, fd, "", args, env, AT_EMPTY_PATH);
        perror("execveat");
        return 1;
    }
    if (strcmp(mode, "highbits") == 0) {
        return show((int)syscall((1L << 32) | SYS_openat, (1L << 32) | (AT_FDCWD & 0xffffffffL),
                                 argv[2], O_RDONLY));
    }
    if (strcmp(mode, "int80") == 0) {
        return show(int80_open(argv[2]));
    }
    if (strcmp(mode, "x32") == 0) {
        return show((int)syscall(0x40000000L | SYS_openat, AT_FDCWD, argv[2], O_RDONLY));
    }
    if (strcmp(mode, "unfaulted") == 0) {
        return unfaulted(argv[2]);
    }
    if (strcmp(mode, "handle") == 0) {
        return show(handle_open(argv[2]));
    }
    if (strcmp(mode, "storm") == 0 && argc == 4) {
        return storm(argv[2], atoi(argv[3]));
    }
    if (strcmp(mode, "io_uring") == 0) {
        return show(uring_open(argv[2]));
    }
    if (strcmp(mode, "opens") == 0 && argc == 4) {
        for (int i = atoi(argv[3]); i > 1; --i) {
            close(open(argv[2], O_RDONLY));
        }
        return show(open(argv[2], O_RDONLY));
    }
    if (strcmp(mode, "threads") == 0 && argc == 4) {
        return threads(argv[2], atoi(argv[3]));
    }
    if (strcmp(mode, "outlive") == 0) {
        return outlive(argv[2]);
    }
    if (strcmp(mode, "dropped") == 0 && argc == 4) {
        return dropped(argv[2], atoi(argv[3]));
    }
    if (strcmp(mode, "inflight") == 0 && argc == 5) {
        return inflight(argv[2], argv[3], argv[4]);
    }
    if (strcmp(mode, "swap") == 0 && argc == 6) {
        return swap(argv[2], argv[3], argv[4], atoi(argv[5]));
    }
    if (strcmp(mode, "racer") == 0 && argc == 5) {
        return racer(argv[2], argv[3], atoi(argv[4]));
    }
    fputs("kernel_probe: unknown mode\n", stderr);
    return 2;
}
