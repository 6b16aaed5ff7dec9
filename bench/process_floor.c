/* process_floor: the least any runtime that stays around a confined call must cost.
 *
 * A C program with no C++ runtime, no configuration and no plugin: it starts the command it is
 * given (raw bwrap with the backend's plan, in exec_overhead_bench), waits for it, and reaps what
 * the call left (the sandbox's init, still tearing down its namespaces when bwrap's outer
 * process exits) as tea-evaluate does, since nothing of a call may outlive it. With --dirs ROOT
 * it also makes and removes, around the call, the three directories every call gets (a run
 * directory beneath ROOT, and a temp directory and a home inside it). With --uid and --gid it
 * starts the command as that identity, dropped in a vfork child as the runtime does (no helper
 * is started for it).
 *
 *   process_floor [--dirs ROOT] [--uid UID --gid GID] -- COMMAND...
 *
 * Exits with the command's status. Not a test and not part of the runtime.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum { path_room = 4200 };

/* `out` = `dir` + `name`, or exit 1: a path too long is refused, never truncated. */
static void join(char out[path_room], const char *dir, const char *name) {
    const int n = snprintf(out, path_room, "%s/%s", dir, name);
    if (n < 0 || n >= path_room) {
        fprintf(stderr, "process_floor: %s: too long\n", dir);
        exit(1);
    }
}

/* The three directories, or exit 1. */
static void make_dirs(const char *root, char run[path_room], char tmp[path_room],
                      char home[path_room]) {
    join(run, root, "run-floor-XXXXXX");
    if (mkdtemp(run) == NULL) {
        perror("process_floor: mkdtemp");
        exit(1);
    }
    join(tmp, run, "tmp");
    join(home, run, "home");
    if (mkdir(tmp, 0700) != 0 || mkdir(home, 0700) != 0) {
        perror("process_floor: mkdir");
        exit(1);
    }
}

/* Starts argv as uid/gid (when uid is not -1) from a child that shares this process's memory
 * until it execs, with raw system calls only. Returns the child, or -1. */
static pid_t start(char **argv, long uid, long gid) {
    const pid_t pid = vfork();
    if (pid == 0) {
        if (uid != -1 &&
            (syscall(SYS_setgroups, 0, NULL) != 0 || syscall(SYS_setresgid, gid, gid, gid) != 0 ||
             syscall(SYS_setresuid, uid, uid, uid) != 0 ||
             prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)) {
            _exit(126);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

int main(int argc, char **argv) {
    const char *root = NULL;
    long uid = -1;
    long gid = -1;
    int i = 1;
    for (; i + 1 < argc && strcmp(argv[i], "--") != 0; i += 2) {
        if (strcmp(argv[i], "--dirs") == 0) {
            root = argv[i + 1];
        } else if (strcmp(argv[i], "--uid") == 0) {
            uid = strtol(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "--gid") == 0) {
            gid = strtol(argv[i + 1], NULL, 10);
        } else {
            break;
        }
    }
    if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc || (uid == -1) != (gid == -1)) {
        fprintf(stderr, "usage: process_floor [--dirs ROOT] [--uid UID --gid GID] -- COMMAND...\n");
        return 2;
    }
    char run[path_room];
    char tmp[path_room];
    char home[path_room];
    if (root != NULL) {
        make_dirs(root, run, tmp, home);
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        perror("process_floor: prctl");
        return 1;
    }
    const pid_t pid = start(argv + i + 1, uid, gid);
    if (pid < 0) {
        perror("process_floor: vfork");
        return 1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    /* What the call left: reaped before returning, as the runtime does. */
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR) {
    }
    if (root != NULL && (rmdir(home) != 0 || rmdir(tmp) != 0 || rmdir(run) != 0)) {
        perror("process_floor: rmdir");
        return 1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
