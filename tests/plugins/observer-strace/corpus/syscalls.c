/* Corpus program: one of each file call the parser handles, through relative paths, dirfds,
 * a fork whose child changes directory, a vfork+exec and fchdir. argv[1] is a writable
 * directory, argv[2] a read-only one. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int raw_open(const char *path, int flags) {
#ifdef SYS_open
    return (int)syscall(SYS_open, path, flags, 0644);
#else
    return openat(AT_FDCWD, path, flags, 0644);
#endif
}

int main(int argc, char **argv) {
    if (argc < 3 || chdir(argv[1]) != 0) return 2;
    char buf[256];
    mkdir("made", 0755);
    chdir("made");
    int fd = raw_open("created.txt", O_WRONLY | O_CREAT | O_TRUNC);
    if (fd >= 0) close(fd);
    chdir("..");
    int dir = open("made", O_RDONLY | O_DIRECTORY);
    fd = openat(dir, "at.txt", O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) close(fd);
    rename("made/at.txt", "made/renamed.txt");
    renameat(dir, "renamed.txt", dir, "renamed2.txt");
    link("made/renamed2.txt", "hard.txt");
    linkat(dir, "renamed2.txt", AT_FDCWD, "hard2.txt", 0);
    symlink("made/created.txt", "sym");
    symlinkat("/etc/hostname", dir, "abs-sym");
    readlink("sym", buf, sizeof buf);
    readlinkat(dir, "abs-sym", buf, sizeof buf);
    truncate("hard.txt", 0);
    unlink("hard2.txt");
    unlinkat(dir, "abs-sym", 0);
    mkdir("gone", 0755);
    rmdir("gone");
    fd = creat("creat.txt", 0600);
    if (fd >= 0) close(fd);
    /* refused by the read-only bind: a write the mechanism stops */
    chdir(argv[2]);
    fd = raw_open("refused.txt", O_WRONLY | O_CREAT);
    fchdir(dir);
    fd = raw_open("renamed2.txt", O_RDONLY);
    if (fd >= 0) close(fd);
    pid_t child = fork();
    if (child == 0) {
        chdir("..");
        fd = raw_open("creat.txt", O_RDONLY);
        raw_open("nope.txt", O_RDONLY); /* fails: only the inherited directory resolves it */
        _exit(fd >= 0 ? 0 : 1);
    }
    waitpid(child, NULL, 0);
    child = vfork();
    if (child == 0) {
        execl("/bin/cat", "cat", "renamed2.txt", (char *)NULL);
        _exit(127);
    }
    waitpid(child, NULL, 0);
    /* read through the kernel's view of the fd: the returned path is the real one */
    fd = raw_open("../sym", O_RDONLY);
    if (fd >= 0) close(fd);
    return 0;
}
