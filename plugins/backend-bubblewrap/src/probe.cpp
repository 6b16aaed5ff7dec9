#include "probe.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <tea/plugin.hpp>
#include <tea/stamp.hpp>
#include <tuple>
#include <utility>
#include <vector>

#include "command_line.hpp"
#include "descriptors.hpp"
#include "fd.hpp"

namespace tea::bwrap {
namespace {

// Where a successful probe is remembered: one file per boot and per everything the probe's answer
// depends on.
std::string probe_stamp(const std::string &bwrap, const std::string &helper,
                        const std::string &view_builder, const Identity &identity) {
    std::string key = tea::stamp::file_key(bwrap) + tea::stamp::file_key(helper) +
                      tea::stamp::file_key(view_builder) + tea::stamp::boot_id();
    for (const char *sysctl :
         {"/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces",
          "/proc/sys/user/max_net_namespaces",
          "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"}) {
        key += tea::stamp::first_line(sysctl) + ";";
    }
    key += std::to_string(identity.uid) + ":" + std::to_string(identity.gid);
    return tea::stamp::path_for("bubblewrap-probe", key).string();
}

// `fd` moved above every number the probe's child is given (Descriptor's, below 20), or -1. The
// child's descriptors are placed one after another, and one opened at a number another is placed
// on would be closed before its own placement: with descriptors the runtime inherited below, the
// view builder's place once received the helper, and the host was said to be unable to confine.
int above_placed(int fd) {
    if (fd < 0) {
        return fd;
    }
    const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 64);
    ::close(fd);
    return moved;
}

// Runs the probe with a clean signal mask and only 0-2, plus `contents` (descriptor, bytes) and
// `programs` (descriptor, path, opened), and returns its status and what it said.
std::pair<int, std::string> run_probe(
    const std::vector<std::string> &argv,
    const std::vector<std::pair<Descriptor, std::string>> &contents,
    const std::vector<std::pair<Descriptor, std::string>> &programs) {
    int err_pipe[2];
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
        return {-1, "cannot make a pipe"};
    }
    // Every descriptor the child gets, closed here once it is started (or not).
    std::vector<Fd> opened;
    for (const auto &[fd, content] : contents) {
        opened.emplace_back(above_placed(::memfd_create("tea-probe", MFD_CLOEXEC)));
        const int mem = opened.back().get();
        if (mem < 0 ||
            ::write(mem, content.data(), content.size()) != static_cast<ssize_t>(content.size()) ||
            ::lseek(mem, 0, SEEK_SET) != 0) {
            ::close(err_pipe[0]);
            ::close(err_pipe[1]);
            return {-1, "cannot write the probe's files"};
        }
    }
    for (const auto &[fd, path] : programs) {
        opened.emplace_back(above_placed(::open(path.c_str(), O_RDONLY | O_CLOEXEC)));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
    std::size_t next = 0;
    for (const auto *list : {&contents, &programs}) {
        for (const auto &item : *list) {
            posix_spawn_file_actions_adddup2(&fa, opened[next++].get(), number(item.first));
        }
    }
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigset_t all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    std::vector<char *> args;
    for (const auto &s : argv) {
        args.push_back(const_cast<char *>(s.c_str()));  // NOLINT
    }
    args.push_back(nullptr);
    char *envp[] = {nullptr};
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, args[0], &fa, &attr, args.data(), envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(err_pipe[1]);
    opened.clear();
    if (rc != 0) {
        ::close(err_pipe[0]);
        return {-1, std::string{"cannot start "} + argv[0] + ": " + std::strerror(rc)};  // NOLINT
    }
    std::string err;
    char buffer[4096];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
    pollfd p{err_pipe[0], POLLIN, 0};
    while (std::chrono::steady_clock::now() < deadline && ::poll(&p, 1, 200) >= 0) {
        if ((p.revents & (POLLIN | POLLHUP)) != 0) {
            const auto n = ::read(err_pipe[0], buffer, sizeof buffer);
            if (n <= 0) {
                break;
            }
            if (err.size() < 4096) {
                err.append(buffer, static_cast<std::size_t>(n));
            }
        }
    }
    ::close(err_pipe[0]);
    ::kill(-pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) {
        err.pop_back();
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (err.empty() && code != 0) {
        err = "exit status " + std::to_string(code);
    }
    return {code, err};
}

}  // namespace

void probe_confinement(const Settings &settings, const Identity &identity) {
    const auto bwrap = find_program(settings.bwrap);
    if (bwrap.empty()) {
        throw tea::sdk::Unavailable(bwrap_missing(settings));
    }
    const auto helper = helper_path();
    const auto view_builder = view_builder_path();
    for (const auto &program : {helper, view_builder}) {
        if (program.empty() || ::access(program.c_str(), X_OK) != 0) {
            throw tea::sdk::Unavailable("the sandbox helper is missing (" + program +
                                        "); reinstall the bubblewrap plugin");
        }
    }
    const auto stamp = probe_stamp(bwrap, helper, view_builder, identity);
    // A stamp only ever skips this check, never the confinement: if the host changed since, bwrap
    // itself fails the call and says why.
    if (tea::stamp::present(stamp)) {
        return;
    }
    // Confine a trivial process with the namespaces every call gets: a host can carry bwrap and
    // still refuse it (user or network namespaces forbidden).
    const std::vector<std::string> root{"--ro-bind", "/",      "/",     "--dev",
                                        "/dev",      "--proc", "/proc", "--"};
    auto argv = identity_prefix(helper, identity) + std::vector<std::string>{bwrap} +
                namespace_options() +
                std::vector<std::string>{"--unshare-uts", "--disable-userns", "--as-pid-1"} + root +
                std::vector<std::string>{in_sandbox(Descriptor::helper), "confine", "--env-fd",
                                         to_string(Descriptor::env),     "--",      "true"};
    auto [status, err] = run_probe(argv, {{Descriptor::env, ""}}, {{Descriptor::helper, helper}});
    if (status == 0) {
        // The same namespaces as the view builder gets them, with one bind and one remount: a
        // kernel without the mount API it uses (open_tree, mount_setattr) is refused here.
        argv = identity_prefix(helper, identity) + std::vector<std::string>{bwrap} +
               namespace_options() + std::vector<std::string>{"--unshare-uts", "--as-pid-1"} +
               view_builder_privileges() + root +
               view_builder_command(identity, find_program("true")) +
               std::vector<std::string>{"true"};
        const std::vector<std::string> view{"--ro-bind", "/dev/null", "/dev/null", "--remount-ro",
                                            "/dev",      "--chdir",   "/",         "--end"};
        std::tie(status, err) =
            run_probe(argv, {{Descriptor::view, join_nul(view)}, {Descriptor::setup_mark, "m"}},
                      {{Descriptor::helper, helper}, {Descriptor::view_builder, view_builder}});
    }
    if (status != 0) {
        throw tea::sdk::Unavailable(
            "bubblewrap cannot confine a process on this host (" + err +
            "). The kernel or container must allow unprivileged user namespaces and new "
            "network namespaces: check the sysctls kernel.unprivileged_userns_clone=1 and "
            "user.max_user_namespaces > 0, and on AppArmor hosts "
            "kernel.apparmor_restrict_unprivileged_userns=0 or a profile for bwrap; or run "
            "unconfined on purpose (\"confinement\": false, or --backend opt-out)");
    }
    tea::stamp::write(stamp);
}

}  // namespace tea::bwrap
