/* TEA_EBPF_TOKEN=TOKEN tea-ebpf-enter -- PROGRAM ARGS...
 *
 * The first process of a call audited by the eBPF observer. Its child claims the call with the
 * token the plugin registered for it, which the observer's programs see as a close(-1) that
 * carries it, and then executes the plan's program: from there on, that process and everything
 * it starts is the call's. The parent waits for it and ends as it ended, as strace does around
 * the command it starts (the plan's program may make a session of its own, which a process group
 * leader could not). Nothing here needs a privilege: the programs read the registers of a call
 * that fails with EBADF. A token claims its call once; a process that claimed it first would
 * leave the call's own process untracked, and the observer then reports that it never saw the
 * target start. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ebpf_event.h"

static volatile pid_t child = 0;

/* A signal meant to end the call reaches the plan's program too. */
static void forward(int sig) {
    if (child > 0) {
        kill(child, sig);
    }
}

int main(int argc, char **argv) {
    if (argc < 3 || strcmp(argv[1], "--") != 0) {
        fputs("usage: TEA_EBPF_TOKEN=TOKEN tea-ebpf-enter -- PROGRAM [ARG...]\n", stderr);
        return 125;
    }
    /* The token comes in the environment, which only the same user and root can read, not on the
     * command line, which every user can; it leaves it before the plan runs. */
    const char *text = getenv("TEA_EBPF_TOKEN");
    char *end = NULL;
    errno = 0;
    const unsigned long long token = text != NULL ? strtoull(text, &end, 16) : 0;
    if (text == NULL || errno != 0 || end == text || *end != '\0') {
        fputs("tea-ebpf-enter: TEA_EBPF_TOKEN holds no token\n", stderr);
        return 125;
    }
    unsetenv("TEA_EBPF_TOKEN");
    const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; ++i) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = forward;
        sigaction(forwarded[i], &sa, NULL);
    }
    const pid_t pid = fork();
    if (pid < 0) {
        perror("tea-ebpf-enter: fork");
        return 125;
    }
    if (pid == 0) {
        for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; ++i) {
            signal(forwarded[i], SIG_DFL);
        }
        (void)syscall(SYS_close, -1, (unsigned long long)TEA_EBPF_MAGIC, token);
        execvp(argv[2], argv + 2);
        const int error = errno;
        fprintf(stderr, "tea-ebpf-enter: %s: %s\n", argv[2], strerror(error));
        _exit(error == ENOENT ? 127 : 126);
    }
    child = pid;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("tea-ebpf-enter: waitpid");
            return 125;
        }
    }
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    /* Ended by a signal: end by the same one, without a core of this process. */
    const int sig = WTERMSIG(status);
    const struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    return 128 + sig;
}
