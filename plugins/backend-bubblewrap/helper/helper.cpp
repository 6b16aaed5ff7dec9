// tea-sandbox-helper: the small executable the bubblewrap backend puts in
// front of bubblewrap and of the target.
//
//   tea-sandbox-helper drop --uid U --gid G -- PROGRAM ARGS...
//       As root, outside the sandbox: become the unprivileged sandbox
//       identity, with no capabilities and no_new_privs, then run PROGRAM
//       (bubblewrap).
//   tea-sandbox-helper confine --env-fd N [--cpu S] [--fsize B] [--nproc N]
//                              [--keyring new|inherited] -- PROGRAM ARGS...
//       Inside the sandbox, as the first process bubblewrap starts (or the one
//       the egress shim starts): take the target's exact environment from
//       descriptor N, apply the limits, join a fresh session keyring (unless
//       the runtime joined one before bubblewrap: "inherited"), close every
//       other descriptor, load the seccomp filter and run the target. As the
//       pid namespace's first process, it stays as its init (below) and does
//       that in a child.
//   tea-sandbox-helper hold --handoff-fd N
//       Inside the sandbox, as its pid 1 (bwrap --as-pid-1), once the view is
//       built: send a pidfd of itself over the socket at N, then reap orphans
//       until the runtime ends the sandbox or dies. Holds the confinement for
//       enter.
//   tea-sandbox-helper init -- PROGRAM ARGS...
//       Inside a grader's sandbox, as its pid 1: run PROGRAM as its child.
//
// As a pid namespace's first process (confine, hold, init), the helper is the
// namespace's init: it reaps orphans, passes the runtime's SIGTERM on to every
// process of the namespace, exits with its child's status, and ends the
// namespace, and everything in it, as soon as the runtime is gone.
//   tea-sandbox-helper enter --handoff-fd N --env-fd M --cwd DIR -- PROGRAM ARGS...
//       On the host, as the process an observer traces: take the holder's pidfd
//       from the socket at N, join every namespace of the sandbox it holds, and
//       start the target there as confine would, in a new session of its own,
//       with no capability, dying with this process, whose exit status it becomes;
//       then end the sandbox (the holder), and what the target left in it.
//
// Any failure ends it before the target runs, with a sentence on stderr and
// exit status 125 (126 or 127 when the target cannot be executed or found).
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <tea/namespace_init.hpp>
#include <tea/program_path.hpp>
#include <vector>

#include "seccomp_filter.hpp"

extern char **environ;  // NOLINT: POSIX

namespace {

constexpr int exit_setup = 125;
constexpr std::size_t max_env_bytes = std::size_t{16} << 20U;

[[noreturn]] void fail(const std::string &what, int error = 0) {
    std::string line = "tea-sandbox-helper: " + what;
    if (error != 0) {
        line += ": ";
        line += std::strerror(error);  // NOLINT(concurrency-mt-unsafe): single-threaded
    }
    line += '\n';
    (void)!::write(STDERR_FILENO, line.data(), line.size());
    ::_exit(exit_setup);
}

unsigned long long number(std::string_view text, const char *option) {
    unsigned long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) {
        fail(std::string{option} + ": expected a number, got '" + std::string{text} + "'");
    }
    return value;
}

struct Args {
    std::vector<std::pair<std::string_view, std::string_view>> options;
    char **program = nullptr;
};

Args parse(int argc, char **argv, int first) {
    Args args;
    for (int i = first; i < argc; ++i) {
        const std::string_view a{argv[i]};
        if (a == "--") {
            if (i + 1 >= argc) {
                fail("no program after --");
            }
            args.program = argv + i + 1;
            return args;
        }
        if (i + 1 >= argc || a.rfind("--", 0) != 0) {
            fail("unexpected argument '" + std::string{a} + "'");
        }
        args.options.emplace_back(a, argv[++i]);
    }
    fail("missing -- PROGRAM");
}

// execvp's search of PATH (tea/program_path.hpp), each candidate executed in turn, but not its
// retry of a file the kernel cannot execute (ENOEXEC) through /bin/sh: such a file is 126 under
// every backend, as execve and the opt-out backend answer it, and a target that sh runs is not
// the exec the plan names for the audit, which would take the call for one never started.
void exec_program(char **program) {
    const char *path = ::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): single-threaded
    const auto tried = tea::program_path::resolve(
        program[0], path != nullptr ? std::optional<std::string_view>{path} : std::nullopt,
        [&](const std::string &candidate) {
            ::execve(candidate.c_str(), program, environ);
            return errno;  // execve returns only when it failed
        });
    const int error = tried.error;
    std::string line = std::string{"tea-sandbox-helper: cannot run "} + program[0] + ": " +
                       std::strerror(error);  // NOLINT(concurrency-mt-unsafe)
    if (error == ENOEXEC) {
        line +=
            " (it has neither an interpreter line (#!) nor a format this kernel runs; begin a "
            "script with a line such as #!/bin/sh)";
    }
    line += '\n';
    (void)!::write(STDERR_FILENO, line.data(), line.size());
    ::_exit(error == ENOENT ? 127 : 126);
}

// No capability can come back: the bounding set and the ambient set emptied.
void clear_bounding_and_ambient() {
    for (int cap = 0; cap <= 63; ++cap) {
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
            fail("cannot drop capability " + std::to_string(cap) + " from the bounding set", errno);
        }
    }
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
        fail("cannot clear ambient capabilities", errno);
    }
}

int drop(int argc, char **argv) {
    long long uid = -1;
    long long gid = -1;
    const auto args = parse(argc, argv, 2);
    for (const auto &[k, v] : args.options) {
        if (k == "--uid") {
            uid = static_cast<long long>(number(v, "--uid"));
        } else if (k == "--gid") {
            gid = static_cast<long long>(number(v, "--gid"));
        } else {
            fail("drop: unknown option " + std::string{k});
        }
    }
    // The sandbox identity is never root: uid 0 inside or outside owns the host's files.
    if (uid <= 0 || gid <= 0 || uid > 0xFFFFFFFE || gid > 0xFFFFFFFE) {
        fail("drop: --uid and --gid must name an unprivileged identity");
    }
    clear_bounding_and_ambient();
    if (::setgroups(0, nullptr) != 0) {
        fail("cannot clear supplementary groups", errno);
    }
    const auto g = static_cast<gid_t>(gid);
    const auto u = static_cast<uid_t>(uid);
    if (::setresgid(g, g, g) != 0 || ::setresuid(u, u, u) != 0) {
        fail("cannot become the sandbox identity", errno);
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        fail("cannot set no_new_privs", errno);
    }
    // Check rather than trust: every id is the sandbox's and no capability is left.
    uid_t ru = 0;
    uid_t eu = 0;
    uid_t su = 0;
    gid_t rg = 0;
    gid_t eg = 0;
    gid_t sg = 0;
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (::getresuid(&ru, &eu, &su) != 0 || ::getresgid(&rg, &eg, &sg) != 0 || ru != u || eu != u ||
        su != u || rg != g || eg != g || sg != g || ::syscall(SYS_capget, &header, data) != 0 ||
        data[0].effective != 0 || data[0].permitted != 0 || data[1].effective != 0 ||
        data[1].permitted != 0) {
        fail("the identity drop did not hold");
    }
    exec_program(args.program);
    return exit_setup;
}

std::vector<std::string> read_environment(int fd) {
    std::string bytes;
    char buffer[65536];
    for (;;) {
        const auto n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            fail("cannot read the environment", errno);
        }
        if (n == 0) {
            break;
        }
        bytes.append(buffer, static_cast<std::size_t>(n));
        if (bytes.size() > max_env_bytes) {
            fail("the environment is larger than 16 MiB");
        }
    }
    ::close(fd);
    std::vector<std::string> env;
    std::size_t start = 0;
    while (start < bytes.size()) {
        const auto end = bytes.find('\0', start);
        const auto stop = end == std::string::npos ? bytes.size() : end;
        if (stop > start) {
            env.emplace_back(bytes.substr(start, stop - start));
        }
        start = stop + 1;
    }
    return env;
}

void set_limit(int resource, unsigned long long value, const char *name) {
    if (value == 0) {
        return;
    }
    const rlimit limit{value, value};
    if (::setrlimit(resource, &limit) != 0) {
        fail(std::string{"cannot set the "} + name + " limit", errno);
    }
}

void set_limits(unsigned long long cpu, unsigned long long fsize, unsigned long long nproc) {
    set_limit(RLIMIT_CPU, cpu, "CPU time");
    set_limit(RLIMIT_FSIZE, fsize, "file size");
    set_limit(RLIMIT_NPROC, nproc, "process count");
}

// The last steps before the target, shared by confine and enter: a fresh session keyring
// (unless the runtime joined one before bwrap, whose filter then refuses keyctl), no_new_privs,
// only 0-2 open, the seccomp filter, then the target with exactly env.
[[noreturn]] void start_target(std::vector<std::string> &env, char **program,
                               bool join_keyring = true) {
    // A fresh anonymous session keyring: nothing the host's session holds is reachable.
    if (join_keyring && ::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) < 0 &&
        errno != ENOSYS) {
        fail("cannot join a new session keyring", errno);
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        fail("cannot set no_new_privs", errno);
    }
    // A descriptor the sandbox inherited (a directory above a cover, say) would
    // reach past every mount; only the standard streams go on to the target.
    if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
        fail("cannot close inherited descriptors", errno);
    }
    if (const int rc = tea::helper::install_seccomp_filter(); rc != 0) {
        fail("cannot load the seccomp filter", -rc);
    }
    tea::namespace_init::release_end_signal();
    static std::vector<char *> envp;
    envp.reserve(env.size() + 1);
    for (auto &e : env) {
        envp.push_back(e.data());
    }
    envp.push_back(nullptr);
    environ = envp.data();  // so that execvp searches the target's own PATH
    exec_program(program);
    ::_exit(exit_setup);
}

// As its pid namespace's first process (bwrap --as-pid-1), the helper stays the namespace's init
// (tea/namespace_init.hpp) and goes on to the program in a child: bwrap's own init would take its
// parent-death signal only after bwrap's set-up, and a runtime killed during it would leave the
// sandbox running for nobody. Returns in the child.
void become_init() {
    if (tea::namespace_init::host_gone()) {
        fail("the runtime that started the call is gone");
    }
    const pid_t child = ::fork();
    if (child < 0) {
        fail("fork", errno);
    }
    if (child == 0) {
        return;
    }
    // The init holds nothing the target lacks: no descriptor beyond 0-2 (the environment, the
    // helper), and its memory does not open for a target of the same identity.
    if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
        fail("cannot close inherited descriptors", errno);
    }
    if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        fail("cannot make the sandbox's init undumpable", errno);
    }
    tea::namespace_init::serve(child);
}

int confine(int argc, char **argv) {
    tea::namespace_init::hold_end_signal();
    int env_fd = -1;
    const auto args = parse(argc, argv, 2);
    unsigned long long cpu = 0;
    unsigned long long fsize = 0;
    unsigned long long nproc = 0;
    bool join_keyring = true;
    for (const auto &[k, v] : args.options) {
        if (k == "--env-fd") {
            env_fd = static_cast<int>(number(v, "--env-fd"));
        } else if (k == "--keyring" && (v == "new" || v == "inherited")) {
            join_keyring = v == "new";
        } else if (k == "--cpu") {
            cpu = number(v, "--cpu");
        } else if (k == "--fsize") {
            fsize = number(v, "--fsize");
        } else if (k == "--nproc") {
            nproc = number(v, "--nproc");
        } else {
            fail("confine: unknown option " + std::string{k});
        }
    }
    if (env_fd < 3) {
        fail("confine: --env-fd must name a descriptor above 2");
    }
    static std::vector<std::string> env = read_environment(env_fd);
    if (::getpid() == 1) {
        become_init();
    }
    set_limits(cpu, fsize, nproc);
    start_target(env, args.program, join_keyring);
}

// The grader's init: the program as its child, with the environment and working directory bwrap
// gave, and only 0-2. With --namespace-init egress-shim (a grader with an egress route), the shim
// in front of the helper is the namespace's first process and its init, and the helper only
// closes what it inherited and runs the program.
int init(int argc, char **argv) {
    tea::namespace_init::hold_end_signal();
    const auto args = parse(argc, argv, 2);
    bool behind_shim = false;
    for (const auto &[name, value] : args.options) {
        if (name != "--namespace-init" || value != "egress-shim") {
            fail("init: unknown option " + std::string{name} + " " + std::string{value});
        }
        behind_shim = true;
    }
    if (behind_shim) {
        // The shim's child: anything else would leave the namespace without the init that ends
        // it once the runtime is gone.
        if (::getpid() == 1 || ::getppid() != 1) {
            fail("init: the egress shim is not the namespace's first process");
        }
    } else if (::getpid() != 1) {
        fail("init: not the first process of a new pid namespace");
    } else {
        become_init();
    }
    if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
        fail("cannot close inherited descriptors", errno);
    }
    tea::namespace_init::release_end_signal();
    exec_program(args.program);
    return exit_setup;
}

int descriptor_option(std::string_view value, const char *option) {
    const auto fd = number(value, option);
    if (fd < 3 || fd > 255) {
        fail(std::string{option} + " must name a descriptor 3..255");
    }
    return static_cast<int>(fd);
}

// The hand-off's only shape: one byte, with room for one descriptor.
struct HandoffMessage {
    char byte = 'h';
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    HandoffMessage() {
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
    }
    HandoffMessage(const HandoffMessage &) = delete;
    HandoffMessage &operator=(const HandoffMessage &) = delete;
};

int hold(int argc, char **argv) {
    tea::namespace_init::hold_end_signal();
    if (argc != 4 || std::string_view{argv[2]} != "--handoff-fd") {
        fail("usage: tea-sandbox-helper hold --handoff-fd N");
    }
    const int handoff = descriptor_option(argv[3], "--handoff-fd");
    // Only as the first process of a pid namespace of its own: a pidfd of any other process
    // would let enter join namespaces that are not the sandbox's.
    if (::getpid() != 1) {
        fail("hold: not the first process of a new pid namespace");
    }
    // Not dumpable: the target runs as the same uid, and could otherwise ptrace this untraced
    // process or write its memory through /proc/1/mem, and act outside the audit.
    if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        fail("cannot make the holder undumpable", errno);
    }
    const int self = static_cast<int>(::syscall(SYS_pidfd_open, 1, 0U));
    if (self < 0) {
        fail("cannot open a pidfd of the holder", errno);
    }
    // A runtime killed while bwrap set the sandbox up left this process no parent-death signal:
    // a sandbox held for nobody is not handed over.
    if (tea::namespace_init::host_gone()) {
        fail("hold: the runtime that started the call is gone");
    }
    HandoffMessage m;
    cmsghdr *c = CMSG_FIRSTHDR(&m.msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &self, sizeof self);
    while (::sendmsg(handoff, &m.msg, MSG_NOSIGNAL) != 1) {
        if (errno != EINTR) {
            fail("cannot hand the sandbox over", errno);
        }
    }
    // Nothing inherited stays open here: not the hand-off, not bwrap's argument descriptor.
    if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
        fail("cannot close inherited descriptors", errno);
    }
    // The orphans of the target are reparented here: reaped as they end, until the runtime ends
    // the sandbox, or dies (the pid namespace's first process ignores every signal sent from
    // inside it). The runtime's SIGTERM at the call's end goes on to the joined target.
    tea::namespace_init::serve(-1);
}

// The holder's pidfd, from the hand-off socket; ends the helper when none comes.
int receive_holder(int handoff) {
    HandoffMessage m;
    ssize_t n = 0;
    while ((n = ::recvmsg(handoff, &m.msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    if (n < 0) {
        fail("enter: cannot read the hand-off", errno);
    }
    const cmsghdr *c = CMSG_FIRSTHDR(&m.msg);
    if (n == 0) {
        fail("enter: the sandbox ended before it was ready");
    }
    // Exactly one descriptor, whole: a truncated or foreign message is no hand-off.
    if (c == nullptr || (m.msg.msg_flags & MSG_CTRUNC) != 0 || c->cmsg_level != SOL_SOCKET ||
        c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int))) {
        fail("enter: the hand-off did not carry one descriptor");
    }
    int pidfd = -1;
    std::memcpy(&pidfd, CMSG_DATA(c), sizeof pidfd);
    ::close(handoff);
    // A pidfd of a live process, or nothing to join.
    if (::syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0U) != 0) {
        fail("enter: the sandbox's holder is gone", errno);
    }
    return pidfd;
}

// Every capability gone from every set: what joining the sandbox's user namespace gave.
void drop_capabilities() {
    clear_bounding_and_ambient();
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[2] = {};
    if (::syscall(SYS_capset, &header, none) != 0) {
        fail("cannot clear the capability sets", errno);
    }
}

int enter(int argc, char **argv) {
    int handoff = -1;
    int env_fd = -1;
    const char *cwd = nullptr;
    const auto args = parse(argc, argv, 2);
    for (const auto &[k, v] : args.options) {
        if (k == "--handoff-fd") {
            handoff = descriptor_option(v, "--handoff-fd");
        } else if (k == "--env-fd") {
            env_fd = descriptor_option(v, "--env-fd");
        } else if (k == "--cwd") {
            cwd = v.data();  // an argv string: NUL-terminated
        } else {
            fail("enter: unknown option " + std::string{k});
        }
    }
    if (handoff < 0 || env_fd < 0 || cwd == nullptr || cwd[0] != '/') {
        fail("enter: --handoff-fd, --env-fd and an absolute --cwd are required");
    }
    static std::vector<std::string> env = read_environment(env_fd);
    const int pidfd = receive_holder(handoff);
    // Every namespace at once, from the holder's pidfd: the view, its pid namespace (for the
    // child), its network, and the nested user namespace that allows no other.
    if (::setns(pidfd, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                           CLONE_NEWUTS | CLONE_NEWCGROUP) != 0) {
        fail("enter: cannot join the sandbox", errno);
    }
    // A new session: no controlling terminal to push input into. Made here, so that the target
    // is in it without leading it (as under bwrap --new-session) and cannot acquire a terminal.
    if (::setsid() < 0) {
        fail("enter: setsid", errno);
    }
    const pid_t child = ::fork();
    if (child < 0) {
        fail("enter: fork", errno);
    }
    if (child == 0) {
        // The target ends with this process, whoever ends it.
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
            fail("enter: cannot die with its parent", errno);
        }
        if (::chdir(cwd) != 0) {
            fail(std::string{"enter: cannot change to "} + cwd, errno);
        }
        ::close(pidfd);
        drop_capabilities();
        start_target(env, args.program);
    }
    drop_capabilities();
    int status = 0;
    while (::waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) {
            fail("enter: waiting for the target", errno);
        }
    }
    // What the target left (a daemon, a double-forked grandchild) ends with it: the holder is the
    // pid namespace's first process, and the kernel ends the namespace with it. It also lets the
    // observer end, which waits for every process it traces.
    if (::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0U) != 0 && errno != ESRCH) {
        fail("enter: cannot end the sandbox", errno);
    }
    if (WIFSIGNALED(status)) {
        // Ended as the target was, so that the status the runtime reads is the target's.
        const int sig = WTERMSIG(status);
        (void)::signal(sig, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        ::pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
        ::kill(::getpid(), sig);
        ::_exit(128 + sig);
    }
    // _exit: nothing of this process runs after the target (no exit handler, no sanitizer's leak
    // check, which could not attach to a process that is already traced).
    ::_exit(WEXITSTATUS(status));
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        fail("usage: tea-sandbox-helper drop|confine|hold|enter|init ...");
    }
    const std::string_view mode{argv[1]};
    if (mode == "drop") {
        return drop(argc, argv);
    }
    if (mode == "confine") {
        return confine(argc, argv);
    }
    if (mode == "hold") {
        return hold(argc, argv);
    }
    if (mode == "init") {
        return init(argc, argv);
    }
    if (mode == "enter") {
        return enter(argc, argv);
    }
    fail("unknown mode '" + std::string{mode} + "'");
}
