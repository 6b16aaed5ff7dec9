// What the call benchmarks share: running a command to its end with its output discarded, and
// medians. Header-only; each benchmark is one program.
#pragma once

#include <fcntl.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern char **environ;  // NOLINT

namespace tea::bench {

// `base` followed by `more`.
inline std::vector<std::string> with(std::vector<std::string> base,
                                     const std::vector<std::string> &more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
}

// A file the command finds open, read-only, at a descriptor: {descriptor, path}.
using OpenFiles = std::vector<std::pair<int, std::string>>;

// Milliseconds from spawn to exit of `argv` run in `cwd`, with `files` open; exits the benchmark
// when the command fails, since a failing variant would measure nothing.
inline double run_ms(const std::vector<std::string> &argv, const std::string &cwd,
                     const OpenFiles &files = {}) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    for (const auto &[fd, path] : files) {
        posix_spawn_file_actions_addopen(&fa, fd, path.c_str(), O_RDONLY, 0);
    }
    posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
    std::vector<char *> args;
    for (const auto &a : argv) {
        args.push_back(const_cast<char *>(a.c_str()));  // NOLINT
    }
    args.push_back(nullptr);
    const auto start = std::chrono::steady_clock::now();
    pid_t pid = -1;
    if (::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) {
        std::fprintf(stderr, "cannot start %s\n", args[0]);
        std::exit(1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    const auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    posix_spawn_file_actions_destroy(&fa);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "%s failed (status %d)\n", argv[0].c_str(), status);
        std::exit(1);
    }
    return ms;
}

// Removes `path` (a tree) when the benchmark exits, by returning from main or by std::exit: a
// failing variant ends the benchmark at once, and its scratch files under /tmp must not stay (the
// runtime's walk for host sockets reads /tmp on every call).
inline void remove_at_exit(const std::string &path) {
    static std::vector<std::string> paths;  // constructed before the handler is registered
    static const bool registered = std::atexit([] {
                                       for (const auto &p : paths) {
                                           std::error_code ec;
                                           std::filesystem::remove_all(p, ec);
                                       }
                                   }) == 0;
    if (!registered) {
        std::fprintf(stderr, "cannot register the clean-up of %s\n", path.c_str());
    }
    paths.push_back(path);
}

// A fresh directory <base>/<prefix>-XXXXXX, mode 0755 (the sandbox identity reaches into it),
// removed when the benchmark exits.
inline std::string scratch_dir(const std::string &prefix, const std::string &base = "/tmp") {
    std::string pattern = base + "/" + prefix + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
        std::perror("mkdtemp");
        std::exit(1);
    }
    ::chmod(pattern.c_str(), 0755);
    remove_at_exit(pattern);
    return pattern;
}

// A benchmark's body, with what it throws (a plan the backend refused, say) reported by `name`
// instead of escaping main.
template <typename Body>
int run_guarded(const char *name, Body body) {
    try {
        return body();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: %s\n", name, e.what());
        return 1;
    }
}

// The first line of /proc/pressure/cpu ("some avg10=... avg60=... avg300=... total=..."), or
// "unknown" without PSI. Printed before and after a run: on a shared VM a run measured while the
// host or the kernel's own workers (each call's network namespace is torn down after it) hold the
// CPUs is slower throughout, and its ratios drift with it.
inline std::string cpu_pressure() {
    const int fd = ::open("/proc/pressure/cpu", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return "unknown";
    }
    char buffer[256] = {};
    const ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
    ::close(fd);
    std::string text{buffer, n > 0 ? static_cast<std::size_t>(n) : 0};
    text = text.substr(0, text.find('\n'));
    return text.empty() ? "unknown" : text;
}

// Reads "--name N" pairs into the numbers they name; false, having said which, at a name that is
// not among `options`.
inline bool read_numeric_options(
    int argc, char **argv,
    std::initializer_list<std::pair<std::string_view, std::size_t *>> options) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view flag = argv[i];
        const auto *option = std::find_if(options.begin(), options.end(),
                                          [&](const auto &known) { return known.first == flag; });
        if (option == options.end()) {
            std::fprintf(stderr, "unknown option %s\n", argv[i]);
            return false;
        }
        *option->second = std::strtoull(argv[i + 1], nullptr, 10);
    }
    return true;
}

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Raw bwrap's own arguments: the namespaces every confined call gets, up to and including "--".
inline std::vector<std::string> raw_bwrap_arguments() {
    std::vector<std::string> argv;
    for (const char *a :
         {"bwrap", "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net",
          "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session",
          "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--"}) {
        argv.emplace_back(a);
    }
    return argv;
}

// Raw bwrap with the namespaces every confined call gets, as the identity tea-evaluate would run
// it as (as root: the sandbox account, through the helper's drop), up to and including "--".
// Exits the benchmark when root has no sandbox account.
inline std::vector<std::string> raw_bwrap(const std::string &helper) {
    std::vector<std::string> argv;
    if (::geteuid() == 0) {
        passwd *pw = ::getpwnam("tea-sandbox");
        if (pw == nullptr) {
            std::fprintf(stderr, "run scripts/install-deps.sh first (no tea-sandbox account)\n");
            std::exit(1);
        }
        argv = {helper,  "drop",
                "--uid", std::to_string(pw->pw_uid),
                "--gid", std::to_string(pw->pw_gid),
                "--"};
    }
    const auto bwrap = raw_bwrap_arguments();
    argv.insert(argv.end(), bwrap.begin(), bwrap.end());
    return argv;
}

}  // namespace tea::bench
