/* open_files DIR COUNT: opens DIR/f0 .. DIR/f<COUNT-1> for reading, one after another. The
 * "call that opens 10,000 files" of the audit benchmark. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: open_files DIR COUNT\n");
        return 2;
    }
    const long count = strtol(argv[2], NULL, 10);
    char path[4096];
    for (long i = 0; i < count; ++i) {
        snprintf(path, sizeof path, "%s/f%ld", argv[1], i);
        const int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            perror(path);
            return 1;
        }
        close(fd);
    }
    return 0;
}
