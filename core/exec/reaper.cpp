#include "exec/reaper.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <tea/dirents.hpp>
#include <tea/read_all.hpp>

#include "exec/call_runner.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::exec::detail {
namespace {

using Clock = std::chrono::steady_clock;

// The pids in a /proc children file ("12 345 "), appended to out.
void read_children(int task_dir, const char *tid, std::vector<pid_t> &out) {
    const std::string name = std::string{tid} + "/children";
    const UniqueFd fd{::openat(task_dir, name.c_str(), O_RDONLY | O_CLOEXEC)};
    if (!fd) {
        return;  // the thread ended meanwhile
    }
    const auto pids = pids_in(tea::read_all(fd.get()));
    out.insert(out.end(), pids.begin(), pids.end());
}

}  // namespace

std::vector<pid_t> pids_in(std::string_view text) {
    std::vector<pid_t> out;
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
    return out;
}

void kill_group(pid_t group, int signal_number) {
    if (group > 0) {
        ::kill(-group, signal_number);  // ESRCH when the group is gone: nothing to do
    }
}

std::vector<pid_t> children_of(int process_dir) {
    std::vector<pid_t> out;
    const UniqueFd tasks{::openat(process_dir, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (!tasks) {
        return out;
    }
    tea::dirents::for_each(tasks.get(), [&](const dirent64 &entry) {
        read_children(tasks.get(), entry.d_name, out);
        return true;
    });
    return out;
}

// The runtime's children, those of every one of its threads: read with plain system calls, as
// this runs twice after every call, on the way out.
std::vector<pid_t> own_children() {
    const UniqueFd self{::open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    return self ? children_of(self.get()) : std::vector<pid_t>{};
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

}  // namespace tea::exec::detail

namespace tea::exec {

void become_subreaper() {
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        throw runtime_failure("cannot become the reaper of the call's orphans: " +
                              errno_text(errno));
    }
}

}  // namespace tea::exec
