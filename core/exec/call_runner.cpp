#include "exec/call_runner.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string_view>
#include <tea/dirents.hpp>
#include <tea/read_all.hpp>
#include <vector>

#include "exec/clone_child.hpp"
#include "exec/terminal_text.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::exec {
namespace {

using Clock = std::chrono::steady_clock;

// After the leader exits, output still buffered in the pipes is read for at
// most this long; a process that escaped every kill cannot hold the call open.
constexpr std::chrono::milliseconds drain_bound{2000};
constexpr std::size_t read_chunk = std::size_t{64} * 1024;

Error setup_error(const std::string &what, int error_number) {
    return runtime_error("cannot set up the call: " + what + ": " + errno_text(error_number));
}

void write_all(int fd, const char *data, std::size_t size) {
    while (size > 0) {
        const auto n = ::write(fd, data, size);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw setup_error("write", errno);
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

// The lowest number the runner's own descriptors take (above_plan_numbers); a plan names 3..255.
constexpr int runner_descriptor_floor = 256;

// The same open file above every descriptor number a plan may name (3..255), so that placing one
// descriptor at its number in the child never overwrites the source of another.
UniqueFd above_plan_numbers(UniqueFd low) {
    UniqueFd high{::fcntl(low.get(), F_DUPFD_CLOEXEC, runner_descriptor_floor)};
    if (!high) {
        throw setup_error("fcntl(F_DUPFD_CLOEXEC)", errno);
    }
    return high;
}

// A connected pair of stream sockets, both ends above the plan's numbers.
std::array<UniqueFd, 2> socket_pair() {
    std::array<int, 2> p{};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p.data()) != 0) {
        throw setup_error("socketpair", errno);
    }
    UniqueFd first{p[0]};
    UniqueFd second{p[1]};
    return {above_plan_numbers(std::move(first)), above_plan_numbers(std::move(second))};
}

// The plan's bytes in a sealed memfd: the child reads exactly what was
// planned, and nothing can change it after the plan was checked.
UniqueFd sealed_memfd(const std::string &content) {
    UniqueFd fd{::memfd_create("tea-plan-file", MFD_CLOEXEC | MFD_ALLOW_SEALING)};
    if (!fd) {
        throw setup_error("memfd_create", errno);
    }
    write_all(fd.get(), content.data(), content.size());
    if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) !=
            0 ||
        ::lseek(fd.get(), 0, SEEK_SET) != 0) {
        throw setup_error("sealing a plan file", errno);
    }
    return above_plan_numbers(std::move(fd));
}

// A file the plan names, open for reading only: what the child gets is a
// descriptor, never the right to write it.
UniqueFd opened_file(const std::string &path) {
    UniqueFd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)};
    if (!fd) {
        throw setup_error("opening " + path + " for the call", errno);
    }
    return above_plan_numbers(std::move(fd));
}

// A terminal the call's output is shown on, and whether what was last shown there left a line
// open. Both streams share one when they are shown on the same terminal.
struct TerminalLine {
    int fd = -1;
    bool open = false;

    // The runtime's own lines after the call start on a line of their own: a target cannot leave
    // half a forged line (or a "\r") for the runtime's first line to complete or overwrite.
    void end() {
        if (open) {
            (void)::write(fd, "\n", 1);  // a terminal that is gone has nothing left to show
            open = false;
        }
    }
};

struct Capture {
    UniqueFd pipe;
    UniqueFd file;
    const OutputSpec *spec = nullptr;
    StreamResult result;
    bool tee_ok = true;
    // When the tee is a terminal: the target's bytes are shown, never acted on, so that it cannot
    // forge or hide the runtime's lines (terminal_text.hpp). The file keeps them exact.
    std::optional<TerminalText> terminal;
    TerminalLine *line = nullptr;

    void consume(const char *data, std::size_t size) {
        result.total_bytes += size;
        if (file) {
            const auto room = spec->cap_bytes - std::min(spec->cap_bytes, result.kept_bytes);
            const auto keep = std::min<std::uint64_t>(room, size);
            if (keep > 0) {
                write_all(file.get(), data, keep);
                result.kept_bytes += keep;
            }
        }
        if (result.total_bytes > spec->cap_bytes) {
            result.truncated = true;
        }
        if (spec->tee_fd < 0 || !tee_ok) {
            return;
        }
        tee(terminal ? terminal->render({data, size}) : std::string_view{data, size});
    }

    // What the terminal still holds back of a sequence cut at the stream's end, escaped.
    void end_of_stream() {
        if (terminal && spec->tee_fd >= 0 && tee_ok) {
            tee(terminal->finish());
        }
    }

    void tee(std::string_view bytes) {
        if (bytes.empty()) {
            return;
        }
        // A closed reader of the runtime's stdout ends the copy, not the call.
        const char *p = bytes.data();
        std::size_t left = bytes.size();
        while (left > 0) {
            const auto n = ::write(spec->tee_fd, p, left);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                tee_ok = false;
                return;
            }
            p += n;
            left -= static_cast<std::size_t>(n);
        }
        if (line != nullptr) {
            line->open = bytes.back() != '\n';
        }
    }

    // Reads what is there; false at end of file.
    bool read_some() {
        // Left uninitialised: zeroing 64 KiB on every read costs page faults, and
        // read() fills what is used.
        std::array<char, read_chunk> buffer;  // NOLINT(cppcoreguidelines-pro-type-member-init)
        for (;;) {
            const auto n = ::read(pipe.get(), buffer.data(), buffer.size());
            if (n > 0) {
                consume(buffer.data(), static_cast<std::size_t>(n));
                continue;
            }
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 && errno == EAGAIN) {
                return true;
            }
            pipe.reset();
            return false;
        }
    }
};

// The device of a terminal descriptor; nullopt when the descriptor is no terminal.
std::optional<dev_t> terminal_device(int fd) {
    struct stat st {};
    if (fd < 0 || ::isatty(fd) == 0 || ::fstat(fd, &st) != 0) {
        return std::nullopt;
    }
    return st.st_rdev;
}

// Decided once per call, when (and only when) a tee goes to a terminal: anything else (a pipe, a
// file, a record) is given the target's bytes unchanged.
void show_on_terminals(std::array<Capture, 2> &captures, std::array<TerminalLine, 2> &lines) {
    std::array<std::optional<dev_t>, 2> devices{};
    for (std::size_t i = 0; i < 2; ++i) {
        const int fd = captures[i].spec->tee_fd;
        devices[i] = terminal_device(fd);
        if (!devices[i]) {
            continue;
        }
        captures[i].terminal.emplace(terminal_charset());
        lines[i].fd = fd;
        const bool same_terminal = i == 1 && devices[0] && *devices[0] == *devices[1];
        captures[i].line = same_terminal ? captures[0].line : &lines[i];
    }
}

UniqueFd open_capture_file(const OutputSpec &spec) {
    if (spec.file.empty()) {
        return {};
    }
    // O_EXCL|O_NOFOLLOW: a planted file or link at the path is never written through.
    UniqueFd fd{
        ::open(spec.file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
    if (!fd) {
        throw setup_error("creating " + spec.file.string(), errno);
    }
    return fd;
}

void kill_group(pid_t group, int signal_number) {
    if (group > 0) {
        ::kill(-group, signal_number);  // ESRCH when the group is gone: nothing to do
    }
}

// The pids in a /proc children file ("12 345 "), appended to out.
void read_children(int task_dir, const char *tid, std::vector<pid_t> &out) {
    const std::string name = std::string{tid} + "/children";
    const UniqueFd fd{::openat(task_dir, name.c_str(), O_RDONLY | O_CLOEXEC)};
    if (!fd) {
        return;  // the thread ended meanwhile
    }
    const std::string text = tea::read_all(fd.get());
    pid_t pid = 0;
    bool in_number = false;
    for (const char c : text) {
        if (c >= '0' && c <= '9') {
            pid = pid * 10 + (c - '0');
            in_number = true;
        } else if (in_number) {
            out.push_back(pid);
            pid = 0;
            in_number = false;
        }
    }
    if (in_number) {
        out.push_back(pid);
    }
}

// The runtime's children, those of every one of its threads: read with plain system calls, as
// this runs twice after every call, on the way out.
std::vector<pid_t> own_children() {
    std::vector<pid_t> out;
    const UniqueFd tasks{::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (!tasks) {
        return out;
    }
    tea::dirents::for_each(tasks.get(), [&](const dirent64 &entry) {
        read_children(tasks.get(), entry.d_name, out);
        return true;
    });
    return out;
}

bool is_subreaper() {
    int flag = 0;
    return ::prctl(PR_GET_CHILD_SUBREAPER, &flag, 0, 0, 0) == 0 && flag != 0;
}

// Every orphan the call left has been reparented to this runtime: end it, and
// what it started, which is reparented in turn. Children the runtime had
// before the call began are not the call's and are left alone.
void end_orphans(const std::vector<pid_t> &before) {
    // Every one has been sent SIGKILL by then; the bound only keeps a process that never
    // finishes dying (stuck in the kernel) from holding the runtime for ever.
    const auto give_up = Clock::now() + std::chrono::seconds{30};
    while (Clock::now() < give_up) {
        auto children = own_children();
        std::erase_if(children, [&](pid_t p) {
            return std::find(before.begin(), before.end(), p) != before.end();
        });
        if (children.empty()) {
            return;
        }
        // Reaped in the order they end, not one after the other: the first process of a pid
        // namespace does not finish exiting until every process of its namespace has been
        // reaped, and one of those may be an orphan reparented here (a target whose parent
        // outside the namespace died first). Waiting on the first before reaping the second
        // would wait for ever. Such an orphan may also arrive after the children were listed:
        // a wait that sees no end for a moment lists them again (the next round).
        std::vector<UniqueFd> pidfds;
        std::vector<pollfd> waits;
        std::vector<pid_t> pids;
        for (const pid_t pid : children) {
            ::kill(pid, SIGKILL);
            UniqueFd fd{static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))};
            if (fd) {
                waits.push_back(pollfd{fd.get(), POLLIN, 0});
                pids.push_back(pid);
                pidfds.push_back(std::move(fd));
            }
        }
        constexpr int relist_ms = 20;
        while (!waits.empty()) {
            const int ready = ::poll(waits.data(), waits.size(), relist_ms);
            if (ready == 0 || (ready < 0 && errno != EINTR)) {
                break;
            }
            for (std::size_t i = 0; i < waits.size();) {
                if (waits[i].revents == 0) {
                    ++i;
                    continue;
                }
                // Blocking: a pidfd turns readable as its process exits, a moment before the
                // process can be reaped, and a WNOHANG wait in that moment would leave it unreaped.
                int status = 0;
                while (::waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {
                }
                waits.erase(waits.begin() + static_cast<std::ptrdiff_t>(i));
                pids.erase(pids.begin() + static_cast<std::ptrdiff_t>(i));
            }
        }
    }
}

int poll_timeout_ms(Clock::time_point now,
                    std::initializer_list<std::optional<Clock::time_point>> at) {
    std::optional<Clock::time_point> first;
    for (const auto &t : at) {
        if (t && (!first || *t < *first)) {
            first = t;
        }
    }
    if (!first) {
        return -1;
    }
    if (*first <= now) {
        return 0;
    }
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*first - now).count();
    return static_cast<int>(std::min<long long>(ms, 60'000));
}

std::vector<char *> c_strings(const std::vector<std::string> &items) {
    std::vector<char *> out;
    out.reserve(items.size() + 1);
    for (const auto &s : items) {
        out.push_back(const_cast<char *>(s.c_str()));  // NOLINT: execve's historical signature
    }
    out.push_back(nullptr);
    return out;
}

// The budget's share of the child's work: the call's cgroups it joins, and the resource limits
// that stand in for a budget no cgroup holds (0: none).
struct ChildBudget {
    std::vector<int> join;  // cgroup.procs files, written "0" before the exec
    std::uint64_t data_bytes = 0;
    std::uint64_t processes = 0;
    [[nodiscard]] bool requested() const {
        return !join.empty() || data_bytes != 0 || processes != 0;
    }
};

// What the child of spawn_as does, and how far it got. It shares the runtime's
// memory until it execs (CLONE_VM | CLONE_VFORK), so it makes only system
// calls, each through syscall(2) where the C library would do more: glibc's
// setresuid, say, would ask every thread of the runtime to change identity too.
struct SpawnAs {
    const char *program = nullptr;
    char *const *argv = nullptr;
    char *const *envp = nullptr;
    const char *cwd = nullptr;
    std::vector<std::pair<int, int>> dups;  // (from, to)
    bool drop = false;                      // become uid/gid with no capability (the plan's runAs)
    int mount_namespace = -1;               // entered first (RunOptions::mount_namespace)
    uid_t uid = 0;
    gid_t gid = 0;
    ChildSetup setup;
    bool die_with_runtime = false;  // arm the parent-death signal (a plan that confines nothing)
    pid_t runtime = -1;             // the process that starts the child
    ChildBudget budget;
    // Set by the child when it fails, before it exits.
    const char *failed_at = nullptr;
    int error = 0;
};

// Every id the sandbox identity's and no capability left: checked, not trusted.
bool identity_holds(const SpawnAs &s) {
    std::array<uid_t, 3> uids{};  // real, effective, saved
    std::array<gid_t, 3> gids{};
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    std::array<__user_cap_data_struct, 2> caps{};
    if (::syscall(SYS_getresuid, &uids[0], &uids[1], &uids[2]) != 0 ||
        ::syscall(SYS_getresgid, &gids[0], &gids[1], &gids[2]) != 0 ||
        ::syscall(SYS_capget, &header, caps.data()) != 0) {
        return false;
    }
    return std::all_of(uids.begin(), uids.end(), [&](uid_t u) { return u == s.uid; }) &&
           std::all_of(gids.begin(), gids.end(), [&](gid_t g) { return g == s.gid; }) &&
           std::all_of(caps.begin(), caps.end(), [](const __user_cap_data_struct &c) {
               return c.effective == 0 && c.permitted == 0 && c.inheritable == 0;
           });
}

// The identity drop (uid-isolation): no capability in any set, no supplementary group, every id
// the sandbox's, no_new_privs; checked, not trusted. Runs in spawn_as's child.
template <typename Fail>
void drop_identity(const SpawnAs &s, Fail &fail) {
    // Capabilities are numbered from 0 up to the kernel's last one without a gap; the first
    // number past it answers EINVAL, and so do all after it.
    for (int cap = 0; cap <= 63; ++cap) {
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
            if (errno == EINVAL && cap > 0) {
                break;
            }
            fail("dropping a capability from the bounding set");
        }
    }
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
        fail("clearing the ambient capabilities");
    }
    if (::syscall(SYS_setgroups, 0, nullptr) != 0) {
        fail("clearing the supplementary groups");
    }
    if (::syscall(SYS_setresgid, s.gid, s.gid, s.gid) != 0 ||
        ::syscall(SYS_setresuid, s.uid, s.uid, s.uid) != 0) {
        fail("changing the identity");
    }
    // The uid change empties the effective and permitted sets but keeps the
    // inheritable one, which the host may have set: emptied too.
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    std::array<__user_cap_data_struct, 2> no_caps{};
    if (::syscall(SYS_capset, &header, no_caps.data()) != 0) {
        fail("clearing the capability sets");
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        fail("setting no_new_privs");
    }
    if (!identity_holds(s)) {
        errno = EPERM;
        fail("checking the identity");
    }
}

int spawn_as_child(void *arg) {
    auto &s = *static_cast<SpawnAs *>(arg);
    auto fail = [&](const char *what) {
        s.failed_at = what;
        s.error = errno;
        ::_exit(127);
    };
    // The order is the call's safety. The process group first, so that ending the group ends
    // whatever this child becomes. Then the cgroup, before anything else the child does, so no
    // step of the call runs (or allocates) outside its budget. Then the call's mount namespace,
    // before anything resolves a path of the call (its lent trees are where the plan names them
    // only in there). Both use descriptors of the runtime's that a plan's number may take once
    // the descriptors are placed, and both take the runtime's privileges (writing the cgroup's
    // tasks, CAP_SYS_ADMIN for setns), so they come before the placing and before the drop.
    if (::setpgid(0, 0) != 0) {
        fail("setpgid");
    }
    for (const int fd : s.budget.join) {
        if (::write(fd, "0", 1) != 1) {
            fail("joining the call's cgroup");
        }
    }
    if (s.mount_namespace >= 0 && ::syscall(SYS_setns, s.mount_namespace, CLONE_NEWNS) != 0) {
        fail("entering the call's mount namespace");
    }
    // As POSIX_SPAWN_SETSIGDEF for every signal: nothing the runtime ignores
    // stays ignored in the call (the mask stays full until the exec).
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
        ::sigaction(sig, &default_action, nullptr);  // EINVAL for KILL, STOP and libc's own
    }
    for (const auto &[from, to] : s.dups) {
        // A descriptor already at its number only loses close-on-exec, as posix_spawn's dup2
        // action does.
        if (from == to ? ::fcntl(to, F_SETFD, 0) != 0 : ::dup2(from, to) < 0) {
            fail("placing a descriptor");
        }
    }
    if (::chdir(s.cwd) != 0) {
        fail("chdir");
    }
    if (s.drop) {
        drop_identity(s, fail);
    }
    // After the drop, so that the keyring and the process count belong to the identity that runs.
    // The budget's stand-ins come after the plan's own limits: the lower of two process counts
    // holds (the plan's is never raised, since the budget's is only set when lower).
    const std::array<std::pair<int, std::uint64_t>, 5> limits{
        {{RLIMIT_CPU, s.setup.limits.cpu_seconds},
         {RLIMIT_FSIZE, s.setup.limits.file_size_bytes},
         {RLIMIT_NPROC, s.setup.limits.processes},
         {RLIMIT_DATA, s.budget.data_bytes},
         {RLIMIT_NPROC,
          s.setup.limits.processes != 0 && s.setup.limits.processes < s.budget.processes
              ? 0
              : s.budget.processes}}};
    for (const auto &[resource, value] : limits) {
        const rlimit limit{value, value};
        if (value != 0 && ::syscall(SYS_prlimit64, 0, resource, &limit, nullptr) != 0) {
            fail("setting a resource limit");
        }
    }
    // A fresh anonymous session keyring: no key of the host's session (a login's credentials,
    // say) is reachable from the call.
    if (s.setup.new_session_keyring &&
        ::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) < 0 && errno != ENOSYS) {
        fail("joining a new session keyring");
    }
    // A runtime killed outright (SIGKILL) ends no call itself. A plan that confines nothing has
    // no mechanism of its own to end it then: its process dies with the runtime. Armed last,
    // since an identity change clears it, then checked against a runtime that died before it was
    // armed (the child was reparented meanwhile). A confinement ends itself instead, watching the
    // call's output pipes (ExecPlan): a parent-death signal could kill its launcher half-way
    // through its set-up (bwrap killed between its clone and releasing its child leaves that
    // child blocked for ever).
    if (s.die_with_runtime) {
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
            fail("arming the parent-death signal");
        }
        if (::syscall(SYS_getppid) != s.runtime) {
            ::_exit(127);  // nobody is left to read why
        }
    }
    sigset_t none;
    sigemptyset(&none);
    ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
    ::execve(s.program, s.argv, s.envp);
    fail("exec");
    return 127;
}

// posix_spawn's work plus the identity drop, the plan's child set-up (limits, keyring) and, for
// a plan that confines nothing, the parent-death signal, in a child that shares the runtime's
// memory until it execs: no copy of the runtime, and no helper process started only to drop
// privileges or set limits. Every process of a plan starts here. Returns the child, or throws
// setup_error; an exec (or the change to the plan's directory) that fails is returned as {-1,
// errno}.
std::pair<pid_t, int> spawn_as(SpawnAs &request) {
    request.runtime = ::getpid();
    // The child's stack is a stretch of this frame: the runtime's thread is suspended until the
    // child execs or exits (CLONE_VFORK), so nothing else uses it meanwhile. No mapping made and
    // removed per call: on a VM, unmapping a range costs a TLB flush of each of its pages.
    // Left uninitialised: the child writes what it uses.
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init)
    alignas(64) std::array<char, std::size_t{64} * 1024> stack;
    const pid_t pid =
        clone_sharing_memory(spawn_as_child, &request, CLONE_VM | CLONE_VFORK | SIGCHLD, stack);
    const int clone_error = errno;
    stack_returned(stack);
    if (pid < 0) {
        throw setup_error("clone", clone_error);
    }
    if (request.failed_at == nullptr) {
        return {pid, 0};
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    // A program that cannot be run there is the call's failure to start, as posix_spawn reports
    // it; anything else is the runtime's.
    const std::string_view step{request.failed_at};
    if (step == "exec" || step == "chdir") {
        return {-1, request.error};
    }
    // Fail closed: a call whose identity or budget could not be established never runs.
    throw setup_error(request.drop
                          ? std::string{"running the call as uid "} + std::to_string(request.uid) +
                                " gid " + std::to_string(request.gid) + ": " + request.failed_at
                          : std::string{"starting the call: "} + request.failed_at,
                      request.error);
}

// One process of a plan: the plan's own or its holder.
struct ProcessParts {
    const std::string &program;  // argv[0] resolved
    const std::vector<std::string> &argv;
    const std::vector<std::string> &env;
    const std::string &cwd;
    const std::vector<PlanFile> &files;
    std::vector<std::pair<int, int>> dups;  // (runtime's descriptor, the child's number)
    // Where the runtime's ends of the deferred files go: (the child's number, the runtime's end).
    std::vector<std::pair<int, UniqueFd>> *deferred = nullptr;
    int mount_namespace = -1;  // RunOptions::mount_namespace
    const ChildBudget *budget = nullptr;
};

// A deferred file: a socket pair, one end for the child, the other the runtime's. A socket rather
// than a pipe: the runtime writes with MSG_NOSIGNAL, so a process that died before reading costs
// it an error, never SIGPIPE.
std::array<UniqueFd, 2> deferred_pair() {
    auto ends = socket_pair();
    // The child only reads: a write back would fill a buffer nobody reads.
    ::shutdown(ends[0].get(), SHUT_WR);
    ::fcntl(ends[1].get(), F_SETFL, O_NONBLOCK);
    return ends;
}

// Starts one process of the plan in a process group of its own, with exactly the given
// descriptors: 0-2, the files and the dups. Returns {pid, 0}, or {-1, errno} when it could not be
// executed; throws setup_error when the runtime could not set it up.
std::pair<pid_t, int> start_process(const ExecPlan &plan, const ProcessParts &p) {
    std::vector<UniqueFd> plan_fds;
    plan_fds.reserve(p.files.size());
    auto dups = p.dups;
    for (const auto &f : p.files) {
        if (f.deferred) {
            if (p.deferred == nullptr) {
                throw runtime_error("the plan defers descriptor " + std::to_string(f.child_fd) +
                                    " but was not started as a staged call");
            }
            auto ends = deferred_pair();
            plan_fds.push_back(std::move(ends[0]));
            p.deferred->emplace_back(f.child_fd, std::move(ends[1]));
        } else {
            plan_fds.push_back(f.path.empty() ? sealed_memfd(f.content) : opened_file(f.path));
        }
        dups.emplace_back(plan_fds.back().get(), f.child_fd);
    }
    auto argv = c_strings(p.argv);
    auto envp = c_strings(p.env);
    const bool budgeted = p.budget != nullptr && p.budget->requested();
    SpawnAs request;
    request.mount_namespace = p.mount_namespace;
    request.program = p.program.c_str();
    request.argv = argv.data();
    request.envp = envp.data();
    request.cwd = p.cwd.c_str();
    request.drop = plan.run_as.requested;
    request.uid = plan.run_as.uid;
    request.gid = plan.run_as.gid;
    request.setup = plan.child;
    request.die_with_runtime = plan.confinement == "opt-out";
    if (budgeted) {
        request.budget = *p.budget;
    }
    request.dups = std::move(dups);
    return spawn_as(request);
}

// A plan's holder, ended with its process group (and reaped) however the call ends.
struct HolderProcess {
    pid_t pid = -1;
    HolderProcess() = default;
    HolderProcess(const HolderProcess &) = delete;
    HolderProcess &operator=(const HolderProcess &) = delete;
    ~HolderProcess() { end(); }
    void signal(int signal_number) const { kill_group(pid, signal_number); }
    void end() {
        if (pid > 0) {
            kill_group(pid, SIGKILL);
            while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
            }
            pid = -1;
        }
    }
};

}  // namespace

int reserve_descriptor_table() {
    // The kernel grows a process's descriptor table when a number beyond it is first used, and
    // while another thread shares the table it waits for an RCU grace period to free the old one
    // (expand_fdtable): 6 to 29 ms on the VM of bench/README.md, against 15 us with one thread.
    // The runner's first descriptor at runner_descriptor_floor is such a growth, and an egress
    // route's proxy thread (or the progress line's) would make every process pay it at its first
    // call. Grown once here, before any thread exists: up to 1024 entries, within RLIMIT_NOFILE.
    rlimit limit{};
    rlim_t highest = 1023;
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        limit.rlim_cur <= highest) {
        highest = limit.rlim_cur == 0 ? 0 : limit.rlim_cur - 1;
    }
    if (highest < static_cast<rlim_t>(runner_descriptor_floor)) {
        return -1;  // the runner's descriptors will not fit either; its own error names it
    }
    // A descriptor of its own to copy: 0-2 may be closed.
    const UniqueFd source{::open("/", O_PATH | O_CLOEXEC)};
    if (!source) {
        return -1;
    }
    const UniqueFd high{::fcntl(source.get(), F_DUPFD_CLOEXEC, static_cast<int>(highest))};
    return high ? high.get() : -1;
}

void become_subreaper() {
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        throw runtime_error("cannot become the reaper of the call's orphans: " + errno_text(errno));
    }
}

std::string resolve_program(const std::string &name) {
    if (name.find('/') != std::string::npos) {
        return name;
    }
    // Read once, single-threaded, before any call runs.
    const char *env_path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
    std::string path = env_path != nullptr && env_path[0] != '\0' ? env_path : "/usr/bin:/bin";
    std::stringstream dirs{path};
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
        if (dir.empty() || dir[0] != '/') {
            continue;  // a relative PATH entry would resolve against whatever cwd the runtime has
        }
        auto candidate = dir;
        candidate += '/';
        candidate += name;
        if (::access(candidate.c_str(), X_OK) == 0 && std::filesystem::is_regular_file(candidate)) {
            return candidate;
        }
    }
    return {};
}

namespace {

// A deferred file's runtime end and what it is to be given.
struct DeferredFile {
    int child_fd = -1;
    UniqueFd fd;
    std::string content;
    std::size_t written = 0;

    // Writes what the socket takes now; closes it once all is written or the reader is gone.
    void write_some() {
        while (fd && written < content.size()) {
            const auto n = ::send(fd.get(), content.data() + written, content.size() - written,
                                  MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                return;
            }
            if (n <= 0) {
                fd.reset();  // the reader ended: what it read was short, and it must refuse it
                return;
            }
            written += static_cast<std::size_t>(n);
        }
        fd.reset();  // the end of the file: the reader has it whole
    }
};

// The first differing part of a process, or nullptr when the complete plan starts the same one.
const char *differs(const ExecPlan &staged, const ExecPlan &complete) {
    if (complete.argv != staged.argv) {
        return "argv";
    }
    if (complete.env != staged.env) {
        return "env";
    }
    if (complete.cwd != staged.cwd) {
        return "cwd";
    }
    if (complete.run_as != staged.run_as) {
        return "runAs";
    }
    if (complete.child != staged.child) {
        return "limits or newSessionKeyring";
    }
    if (complete.setup_mark_fd != staged.setup_mark_fd) {
        return "setupMark";
    }
    if (complete.holder || staged.holder || complete.handoff_fd != staged.handoff_fd) {
        return "holder";
    }
    if (complete.lend != staged.lend) {
        return "lend";
    }
    if (complete.confinement != staged.confinement) {
        return "confinement";
    }
    if (complete.files.size() != staged.files.size()) {
        return "files";
    }
    for (const auto &f : staged.files) {
        const auto same = std::find_if(complete.files.begin(), complete.files.end(),
                                       [&](const PlanFile &c) { return c.child_fd == f.child_fd; });
        if (same == complete.files.end() || same->deferred ||
            (f.deferred ? !same->path.empty() : !(*same == f))) {
            return "files";
        }
    }
    return nullptr;
}

}  // namespace

struct StartedCall::State {
    RunOptions options;
    ExecPlan staged;
    CallResult result;
    UniqueFd mark;
    std::array<Capture, 2> captures;
    std::array<TerminalLine, 2> terminal_lines;
    HolderProcess holder;
    pid_t pid = -1;
    UniqueFd pidfd;
    Clock::time_point start;
    bool reaper = false;
    std::vector<pid_t> children_before;
    std::vector<DeferredFile> deferred;
    std::optional<CallCgroup> cgroup;  // ends what is left in it, whatever ends the call
    ChildBudget child_budget;
    bool ended = false;  // waited for, or never started
    // The thread that started the processes: their parent-death signal fires when that thread
    // ends, so it is the one that waits for them.
    pid_t thread = ::gettid();

    State(const ExecPlan &plan, const RunOptions &run_options)
        : options{run_options}, staged{plan} {}
    State(const State &) = delete;
    State &operator=(const State &) = delete;
    State(State &&) = delete;
    State &operator=(State &&) = delete;

    // A call never finished: its process is ended before it could act on a part of its plan.
    ~State() {
        if (!ended && pid > 0) {
            kill_group(pid, SIGKILL);
            while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
            }
            holder.end();
            if (reaper) {
                end_orphans(children_before);
            }
        }
    }

    void start_plan();
    void wait();
    void make_budget();
};

// The resource limit that stands in for `value`, within the hard limit the runtime has (a child
// may not raise it).
std::uint64_t within_hard_limit(int resource, std::uint64_t value) {
    rlimit limit{};
    if (value != 0 && ::getrlimit(resource, &limit) == 0 && limit.rlim_max != RLIM_INFINITY) {
        return std::min<std::uint64_t>(value, limit.rlim_max);
    }
    return value;
}

void StartedCall::State::make_budget() {
    const auto &budget = options.budget;
    if (!budget.any()) {
        return;
    }
    static const CgroupLayout no_cgroups;
    cgroup.emplace(budget.cgroups ? host_cgroup_layout() : no_cgroups, budget);
    result.budget = cgroup->report();
    child_budget.join = cgroup->join_fds();
    if (result.budget.memory == Enforcement::rlimit) {
        child_budget.data_bytes = within_hard_limit(RLIMIT_DATA, budget.memory_bytes);
    }
    if (result.budget.processes == Enforcement::rlimit) {
        child_budget.processes = within_hard_limit(RLIMIT_NPROC, budget.processes);
    }
}

void StartedCall::State::start_plan() {
    const ExecPlan &plan = staged;
    if (plan.holder && has_deferred_files(plan)) {
        // The holder builds the view before the plan's process joins it: nothing to overlap.
        throw runtime_error("a plan with a holder cannot defer its files");
    }
    const std::string program = resolve_program(plan.argv.at(0));
    const std::string holder_program = plan.holder ? resolve_program(plan.holder->argv.at(0)) : "";
    if (program.empty() || (plan.holder && holder_program.empty())) {
        result.start_errno = ENOENT;
        result.start_error =
            (program.empty() ? plan.argv[0] : plan.holder->argv[0]) + ": command not found";
        ended = true;
        return;
    }

    // The setup mark: one byte in a pipe whose write end is closed at once, so nothing but the
    // plan's mechanism taking it can empty it, and nothing in the call can put it back.
    if (plan.setup_mark_fd >= 0) {
        std::array<int, 2> p{};
        if (::pipe2(p.data(), O_CLOEXEC) != 0) {
            throw setup_error("pipe2", errno);
        }
        UniqueFd read_end{p[0]};
        const UniqueFd write_end{p[1]};
        write_all(write_end.get(), "m", 1);
        mark = above_plan_numbers(std::move(read_end));
    }
    // The hand-off between the holder and the plan's process: a socket pair no other process can
    // reach, so what arrives on it was sent by the holder the runtime started.
    std::array<UniqueFd, 2> handoff;
    if (plan.holder) {
        handoff = socket_pair();
    }

    std::array<UniqueFd, 2> child_ends;
    const std::array<const OutputSpec *, 2> specs{&options.out, &options.err};
    for (std::size_t i = 0; i < 2; ++i) {
        std::array<int, 2> p{};
        if (::pipe2(p.data(), O_CLOEXEC) != 0) {
            throw setup_error("pipe2", errno);
        }
        captures[i].pipe.reset(p[0]);
        child_ends[i].reset(p[1]);
        captures[i].spec = specs[i];
        captures[i].file = open_capture_file(*specs[i]);
        ::fcntl(captures[i].pipe.get(), F_SETFL, O_NONBLOCK);
    }
    show_on_terminals(captures, terminal_lines);

    UniqueFd stdin_fd;
    if (options.in.kind == StdinSpec::Kind::null_device) {
        stdin_fd.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    } else if (options.in.kind == StdinSpec::Kind::file) {
        stdin_fd.reset(::open(options.in.file.c_str(), O_RDONLY | O_CLOEXEC));
    }
    if (options.in.kind != StdinSpec::Kind::inherit && !stdin_fd) {
        throw setup_error("opening the call's stdin", errno);
    }
    std::vector<std::pair<int, int>> streams;
    if (stdin_fd) {
        streams.emplace_back(stdin_fd.get(), 0);
    }
    streams.emplace_back(child_ends[0].get(), 1);
    streams.emplace_back(child_ends[1].get(), 2);

    // Whatever a library or plugin opened without O_CLOEXEC stays out of the
    // child: only 0-2 and the plan's files (placed by dup2 above) survive exec.
    ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);

    make_budget();
    result.limits = plan.child.limits;
    reaper = is_subreaper();
    if (reaper) {
        children_before = own_children();
    }
    start = Clock::now();
    if (plan.holder) {
        // Never the call's stdin: the holder reads nothing, and input meant for the target must
        // not be taken by it.
        const UniqueFd null{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
        if (!null) {
            throw setup_error("opening /dev/null", errno);
        }
        ProcessParts parts{holder_program,
                           plan.holder->argv,
                           plan.holder->env,
                           plan.holder->cwd,
                           plan.holder->files,
                           {{null.get(), 0},
                            {child_ends[0].get(), 1},
                            {child_ends[1].get(), 2},
                            {handoff[0].get(), plan.holder->handoff_fd}}};
        parts.mount_namespace = options.mount_namespace;
        if (mark) {
            parts.dups.emplace_back(mark.get(), plan.setup_mark_fd);
        }
        parts.budget = &child_budget;
        const auto [holder_pid, rc] = start_process(plan, parts);
        if (rc != 0) {
            result.start_errno = rc;
            result.start_error = holder_program + ": " + errno_text(rc);
            ended = true;
            return;
        }
        holder.pid = holder_pid;
    }
    std::vector<std::pair<int, UniqueFd>> deferred_ends;
    ProcessParts parts{program, plan.argv, plan.env, plan.cwd, plan.files, streams};
    parts.deferred = &deferred_ends;
    parts.mount_namespace = options.mount_namespace;
    parts.budget = &child_budget;
    if (plan.holder) {
        parts.dups.emplace_back(handoff[1].get(), plan.handoff_fd);
    } else if (mark) {
        parts.dups.emplace_back(mark.get(), plan.setup_mark_fd);
    }
    const auto [started_pid, rc] = start_process(plan, parts);
    for (auto &[child_fd, end] : deferred_ends) {
        deferred.push_back(DeferredFile{child_fd, std::move(end), {}, 0});
    }
    if (rc != 0) {
        result.start_errno = rc;
        result.start_error = program + ": " + errno_text(rc);
        ended = true;
        return;
    }
    pid = started_pid;
    result.started = true;

    pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd) {
        const int error_number = errno;
        kill_group(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        ended = true;
        throw setup_error("pidfd_open", error_number);
    }
}

void StartedCall::State::wait() {
    if (::gettid() != thread) {
        // Unfinished: the destructor ends the call.
        throw runtime_error(
            "a call must be waited for by the thread that started it: its processes die with "
            "that thread");
    }
    ended = true;
    for (auto &d : deferred) {
        d.write_some();
    }
    std::optional<Clock::time_point> deadline;
    if (options.timeout) {
        deadline = start + *options.timeout;
    }
    std::optional<Clock::time_point> kill_at;
    std::optional<Clock::time_point> drain_until;
    bool leader_done = false;

    auto begin_ending = [&](Clock::time_point now) {
        kill_group(pid, SIGTERM);
        holder.signal(SIGTERM);
        if (!kill_at) {
            kill_at = now + options.kill_grace;
        }
    };

    std::vector<pollfd> fds;
    for (;;) {
        const bool pipes_open = captures[0].pipe.valid() || captures[1].pipe.valid();
        if (leader_done && !pipes_open) {
            break;
        }
        fds.clear();
        const int pid_slot = leader_done ? -1 : static_cast<int>(fds.size());
        if (!leader_done) {
            fds.push_back(pollfd{pidfd.get(), POLLIN, 0});
        }
        std::array<int, 2> pipe_slot{-1, -1};
        for (std::size_t i = 0; i < 2; ++i) {
            if (captures[i].pipe) {
                pipe_slot[i] = static_cast<int>(fds.size());
                fds.push_back(pollfd{captures[i].pipe.get(), POLLIN, 0});
            }
        }
        const int signal_slot =
            (!leader_done && options.signal_fd >= 0) ? static_cast<int>(fds.size()) : -1;
        if (signal_slot >= 0) {
            fds.push_back(pollfd{options.signal_fd, POLLIN, 0});
        }
        const auto deferred_slot = fds.size();
        for (const auto &d : deferred) {
            if (d.fd) {
                fds.push_back(pollfd{d.fd.get(), POLLOUT, 0});
            }
        }
        auto now = Clock::now();
        const int wait_ms = leader_done ? poll_timeout_ms(now, {drain_until})
                                        : poll_timeout_ms(now, {deadline, kill_at});
        const int ready = ::poll(fds.data(), fds.size(), wait_ms);
        if (ready < 0 && errno != EINTR) {
            kill_group(pid, SIGKILL);
            throw setup_error("poll", errno);
        }
        now = Clock::now();

        for (std::size_t i = 0; i < 2; ++i) {
            if (pipe_slot[i] >= 0 && fds[static_cast<std::size_t>(pipe_slot[i])].revents != 0) {
                captures[i].read_some();
            }
        }
        for (std::size_t slot = deferred_slot; slot < fds.size(); ++slot) {
            if (fds[slot].revents != 0) {
                for (auto &d : deferred) {
                    if (d.fd.get() == fds[slot].fd) {
                        d.write_some();
                    }
                }
            }
        }
        if (signal_slot >= 0 &&
            (fds[static_cast<std::size_t>(signal_slot)].revents & POLLIN) != 0) {
            signalfd_siginfo info{};
            if (::read(options.signal_fd, &info, sizeof info) ==
                static_cast<ssize_t>(sizeof info)) {
                result.interrupted_by = static_cast<int>(info.ssi_signo);
                begin_ending(now);
            }
        }
        if (pid_slot >= 0 && (fds[static_cast<std::size_t>(pid_slot)].revents & POLLIN) != 0) {
            result.elapsed = Clock::now() - start;
            // What the target left running in its group ends with it. Sent
            // before the leader is reaped, so its id cannot have been reused.
            kill_group(pid, SIGKILL);
            int status = 0;
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            if (WIFEXITED(status)) {
                result.exit_code = WEXITSTATUS(status);
            } else if (WIFSIGNALED(status)) {
                result.signal = WTERMSIG(status);
            }
            leader_done = true;
            for (auto &d : deferred) {
                d.fd.reset();
            }
            // The holder keeps the confinement standing for no one now; ending it ends what is
            // left inside (its pid 1 dies with it).
            holder.end();
            if (reaper) {
                end_orphans(children_before);
            }
            if (cgroup) {
                // Whatever escaped the group and the reaper (a runtime that is none) ends here.
                result.budget = cgroup->end();
            }
            drain_until = Clock::now() + drain_bound;
            continue;
        }
        if (leader_done) {
            if (drain_until && now >= *drain_until) {
                break;
            }
            continue;
        }
        if (deadline && now >= *deadline && !result.timed_out) {
            result.timed_out = true;
            begin_ending(now);
        }
        if (kill_at && now >= *kill_at) {
            kill_group(pid, SIGKILL);
            holder.signal(SIGKILL);
            kill_at = now + std::chrono::hours{24};  // sent; wait for the exit
        }
    }
    for (auto &capture : captures) {
        capture.end_of_stream();
    }
    for (auto &line : terminal_lines) {
        line.end();
    }
    result.out = captures[0].result;
    result.err = captures[1].result;
    if (mark) {
        // Read after the whole call has ended: a byte still there was never taken.
        int unread = 0;
        result.setup_marked = ::ioctl(mark.get(), FIONREAD, &unread) == 0;
        result.setup_reached = result.setup_marked && unread == 0;
    }
}

StartedCall::StartedCall(const ExecPlan &staged, const RunOptions &options)
    : state_{std::make_unique<State>(staged, options)} {
    state_->start_plan();
}

StartedCall::StartedCall(StartedCall &&) noexcept = default;
StartedCall::~StartedCall() = default;

pid_t StartedCall::pid() const {
    return state_ ? state_->pid : -1;
}

CallResult StartedCall::finish(const ExecPlan &complete) {
    if (!state_) {
        throw runtime_error("the staged call was already finished");
    }
    const auto state = std::move(state_);
    if (state->ended) {
        return state->result;  // it never started: nothing of it to continue
    }
    // A process started on one plan must not be finished with another's files: the same
    // mechanism would be handed a view its backend did not describe for that process.
    if (const char *field = differs(state->staged, complete)) {
        throw runtime_error(std::string{"the complete plan does not start the process staged "
                                        "for it ("} +
                            field + " differs)");
    }
    for (auto &d : state->deferred) {
        const auto f = std::find_if(complete.files.begin(), complete.files.end(),
                                    [&](const PlanFile &c) { return c.child_fd == d.child_fd; });
        d.content = f->content;
    }
    // The call's time and its timeout count from here, where its process gets the whole plan: a
    // backend slow to complete the plan must not use up the target's time, nor count in it.
    state->start = Clock::now();
    state->wait();
    return state->result;
}

CallResult StartedCall::wait_for_end() {
    const auto state = std::move(state_);
    if (!state->ended) {
        state->wait();
    }
    return state->result;
}

CallResult run_call(const ExecPlan &plan, const RunOptions &options) {
    if (has_deferred_files(plan)) {
        throw runtime_error("the plan defers a descriptor's content but is run as a whole");
    }
    StartedCall call{plan, options};
    return call.wait_for_end();
}

}  // namespace tea::exec
