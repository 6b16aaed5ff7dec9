/* The target of the sample documents in docs/plugin-authoring.md (documents_test.cpp): linked
 * statically, so that what it opens is the same on every host (no dynamic loader, no locale). It
 * writes notes.txt in its working directory and reads /etc/passwd. */
#include <fcntl.h>
#include <unistd.h>

int main(void) {
    char buffer[64];
    int fd = open("notes.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, "noted\n", 6) != 6 || close(fd) != 0) {
        return 1;
    }
    fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, buffer, sizeof buffer) < 0 || close(fd) != 0) {
        return 1;
    }
    return 0;
}
