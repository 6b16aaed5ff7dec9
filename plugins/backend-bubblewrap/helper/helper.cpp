// tea-sandbox-helper: the small executable the bubblewrap backend puts in
// front of bubblewrap and of the target.
//
//   tea-sandbox-helper drop --uid U --gid G -- PROGRAM ARGS...
//       As root, outside the sandbox: become the unprivileged sandbox
//       identity, with no capabilities and no_new_privs, then run PROGRAM
//       (bubblewrap).
//   tea-sandbox-helper confine --env-fd N [--cpu S] [--fsize B] [--nproc N]
//                              [--cwd DIR] -- PROGRAM ARGS...
//       Inside the sandbox, as the first process bubblewrap starts: take the
//       target's exact environment from descriptor N, apply the limits, join a
//       fresh session keyring, close every other descriptor, load the seccomp
//       filter and run the target.
//
// Any failure ends it before the target runs, with a sentence on stderr and
// exit status 125 (126 or 127 when the target cannot be executed or found).
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/keyctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
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

void exec_program(char **program) {
    ::execvp(program[0], program);
    const int error = errno;
    std::string line = std::string{"tea-sandbox-helper: cannot run "} + program[0] + ": " +
                       std::strerror(error) + "\n";  // NOLINT(concurrency-mt-unsafe)
    (void)!::write(STDERR_FILENO, line.data(), line.size());
    ::_exit(error == ENOENT ? 127 : 126);
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
    for (int cap = 0; cap <= 63; ++cap) {
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
            fail("cannot drop capability " + std::to_string(cap) + " from the bounding set", errno);
        }
    }
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
        fail("cannot clear ambient capabilities", errno);
    }
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

int confine(int argc, char **argv) {
    int env_fd = -1;
    const auto args = parse(argc, argv, 2);
    unsigned long long cpu = 0;
    unsigned long long fsize = 0;
    unsigned long long nproc = 0;
    for (const auto &[k, v] : args.options) {
        if (k == "--env-fd") {
            env_fd = static_cast<int>(number(v, "--env-fd"));
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
    set_limit(RLIMIT_CPU, cpu, "CPU time");
    set_limit(RLIMIT_FSIZE, fsize, "file size");
    set_limit(RLIMIT_NPROC, nproc, "process count");
    // A fresh anonymous session keyring: nothing the host's session holds is reachable.
    if (::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) < 0 && errno != ENOSYS) {
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
    static std::vector<char *> envp;
    envp.reserve(env.size() + 1);
    for (auto &e : env) {
        envp.push_back(e.data());
    }
    envp.push_back(nullptr);
    environ = envp.data();  // so that execvp searches the target's own PATH
    exec_program(args.program);
    return exit_setup;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        fail("usage: tea-sandbox-helper drop|confine ... -- PROGRAM ARGS...");
    }
    const std::string_view mode{argv[1]};
    if (mode == "drop") {
        return drop(argc, argv);
    }
    if (mode == "confine") {
        return confine(argc, argv);
    }
    fail("unknown mode '" + std::string{mode} + "'");
}
