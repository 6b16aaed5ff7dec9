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

#include "exec/conversation.hpp"
#include "exec/namespace_inits.hpp"
#include "exec/output_capture.hpp"
#include "exec/plan_descriptors.hpp"
#include "exec/reaper.hpp"
#include "exec/spawn.hpp"
#include "exec/staged_call.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/wait_limit.hpp"

namespace tea::exec {
namespace {

using namespace detail;  // NOLINT(google-build-using-namespace): the runner's own parts
using Clock = std::chrono::steady_clock;

// After the leader exits, output still buffered in the pipes is read for at
// most this long; a process that escaped every kill cannot hold the call open.
constexpr std::chrono::milliseconds drain_bound{2000};

// At the end of a grace, how long the confinement's own processes (bwrap, the observer) get to end
// on their own once the namespaces' inits were killed, before their group is killed too.
constexpr std::chrono::milliseconds group_kill_delay{1000};

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

}  // namespace

int reserve_descriptor_table() {
    // The kernel grows a process's descriptor table when a number beyond it is first used, and
    // while another thread shares the table it waits for an RCU grace period to free the old one
    // (expand_fdtable), which costs milliseconds where one thread costs microseconds
    // (bench/README.md).
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
    // Destroyed after the destructor's body ended the call: its thread sees call_ended then.
    std::unique_ptr<ConversationThread> conversation;
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
    // A deadline past the clock's range would wrap into the past and end the call at once.
    const std::chrono::milliseconds max_wait{max_wait_ms};
    if ((options.timeout && *options.timeout > max_wait) || options.kill_grace > max_wait) {
        throw runtime_failure("a call's timeout and its kill grace may each be at most " +
                              std::to_string(max_wait_ms) + " ms");
    }
    const ExecPlan &plan = staged;
    if (plan.holder && has_deferred_files(plan)) {
        // The holder builds the view before the plan's process joins it: nothing to overlap.
        throw runtime_failure("a plan with a holder cannot defer its files");
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

    if (options.conversation) {
        conversation = std::make_unique<ConversationThread>(*options.conversation);
    }
    const bool stdio = conversation && options.conversation->stdio;
    static const OutputSpec not_captured;
    std::array<UniqueFd, 2> child_ends;
    const std::array<const OutputSpec *, 2> specs{stdio ? &not_captured : &options.out,
                                                  &options.err};
    for (std::size_t i = 0; i < 2; ++i) {
        if (i == 0 && stdio) {
            captures[i].spec = specs[i];  // the target's stdout is the conversation's
            continue;
        }
        std::array<int, 2> p{};
        if (::pipe2(p.data(), O_CLOEXEC) != 0) {
            throw setup_error("pipe2", errno);
        }
        captures[i].pipe.reset(p[0]);
        child_ends[i].reset(p[1]);
        captures[i].spec = specs[i];
        captures[i].file = open_capture_file(*specs[i]);
        captures[i].start_redacting();
        ::fcntl(captures[i].pipe.get(), F_SETFL, O_NONBLOCK);
    }
    show_on_terminals(captures, terminal_lines);

    UniqueFd stdin_fd;
    if (stdio) {
        stdin_fd = std::move(conversation->target_stdin());
    } else if (options.in.kind == StdinSpec::Kind::null_device) {
        stdin_fd.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    } else if (options.in.kind == StdinSpec::Kind::file) {
        stdin_fd.reset(::open(options.in.file.c_str(), O_RDONLY | O_CLOEXEC));
    }
    if ((stdio || options.in.kind != StdinSpec::Kind::inherit) && !stdin_fd) {
        throw setup_error("opening the call's stdin", errno);
    }
    std::vector<std::pair<int, int>> streams;
    if (stdin_fd) {
        streams.emplace_back(stdin_fd.get(), 0);
    }
    // A stdio conversation's stdout is the target's alone: the holder writes to stderr.
    const int stdout_end = stdio ? conversation->target_stdout().get() : child_ends[0].get();
    const int holder_stdout = stdio ? child_ends[1].get() : child_ends[0].get();
    streams.emplace_back(stdout_end, 1);
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
                            {holder_stdout, 1},
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
        if (rc == ENOEXEC) {
            // execve runs no script through sh, and neither does any backend: one answer (126).
            result.start_error +=
                " (it has neither an interpreter line (#!) nor a format this kernel runs; begin "
                "a script with a line such as #!/bin/sh)";
        }
        ended = true;
        return;
    }
    pid = started_pid;
    result.started = true;
    if (stdio) {
        // Only the target holds them now: the conversation sees its stdout end with it.
        conversation->target_stdout().reset();
    }

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
        throw runtime_failure(
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
    std::optional<Clock::time_point> group_kill_at;  // after the namespaces' inits were killed
    std::optional<Clock::time_point> drain_until;
    bool leader_done = false;
    bool talk_returned = false;
    if (conversation) {
        // Here, not at the start: a staged process talks only once it has its whole plan.
        conversation->start(pid, staged.confinement != "opt-out");
    }

    auto begin_ending = [&](Clock::time_point now) {
        // A confined target runs in a pid namespace and a session of its confinement's own: the
        // group's SIGTERM would reach only the confinement's processes (bwrap dies of it) and end
        // the target before its grace. The namespace's init passes it on instead. An opt-out
        // plan's processes are all the target's, and the group is theirs.
        if (staged.confinement == "opt-out" ||
            signal_namespace_inits({pid, holder.pid}, SIGTERM) == 0) {
            kill_group(pid, SIGTERM);
            holder.signal(SIGTERM);
        }
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
        const int talk_slot =
            (!leader_done && conversation && !talk_returned) ? static_cast<int>(fds.size()) : -1;
        if (talk_slot >= 0) {
            fds.push_back(pollfd{conversation->returned_fd(), POLLIN, 0});
        }
        const auto deferred_slot = fds.size();
        for (const auto &d : deferred) {
            if (d.fd) {
                fds.push_back(pollfd{d.fd.get(), POLLOUT, 0});
            }
        }
        auto now = Clock::now();
        const int wait_ms = leader_done ? poll_timeout_ms(now, {drain_until})
                                        : poll_timeout_ms(now, {deadline, kill_at, group_kill_at});
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
        if (talk_slot >= 0 && (fds[static_cast<std::size_t>(talk_slot)].revents & POLLIN) != 0) {
            talk_returned = true;
            if (!kill_at) {
                result.ended_by_runtime = true;
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
            if (reaper) {
                // Counted before anything here ends them: a tracer killed (by the memory
                // budget's OOM killer, say) leaves what it traced running on, unobserved, and
                // those processes are reparented here. The holder is the runtime's own child.
                auto children = own_children();
                std::erase_if(children, [&](pid_t p) {
                    return p == holder.pid ||
                           std::find(children_before.begin(), children_before.end(), p) !=
                               children_before.end();
                });
                result.outlived_leader = children.size();
            }
            if (conversation) {
                conversation->call_ended();
            }
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
            // Attack: a target that ignores SIGTERM outlasts its grace; killing the group first
            // kills the audit's tracer while the target still runs, and the call the tracer had
            // stopped but not yet written then runs unrecorded. The namespaces' inits go first:
            // their processes die with them, and the tracer, which saw them end, after them.
            const bool inits = staged.confinement != "opt-out" &&
                               signal_namespace_inits({pid, holder.pid}, SIGKILL) != 0;
            if (inits) {
                group_kill_at = now + group_kill_delay;
            } else {
                kill_group(pid, SIGKILL);
                holder.signal(SIGKILL);
            }
            kill_at = now + std::chrono::hours{24};  // sent; wait for the exit
        }
        if (group_kill_at && now >= *group_kill_at) {
            // The confinement's own processes did not end with the namespaces.
            kill_group(pid, SIGKILL);
            holder.signal(SIGKILL);
            group_kill_at.reset();
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
    if (conversation) {
        conversation->join();
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
        throw runtime_failure("the staged call was already finished");
    }
    const auto state = std::move(state_);
    if (state->ended) {
        return state->result;  // it never started: nothing of it to continue
    }
    // A process started on one plan must not be finished with another's files: the same
    // mechanism would be handed a view its backend did not describe for that process.
    if (const char *field = differs(state->staged, complete)) {
        throw runtime_failure(std::string{"the complete plan does not start the process staged "
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
        throw runtime_failure("the plan defers a descriptor's content but is run as a whole");
    }
    StartedCall call{plan, options};
    return call.wait_for_end();
}

}  // namespace tea::exec
