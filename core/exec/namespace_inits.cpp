#include "exec/namespace_inits.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <tea/read_all.hpp>

#include "exec/reaper.hpp"
#include "util/fd.hpp"

namespace tea::exec::detail {
namespace {

// A confinement's own processes in the runtime's namespace are few (an observer, a launcher,
// bwrap): the bound keeps a plan whose processes all stay there from making the walk long.
constexpr std::size_t max_walked = 64;

// The process's id in each pid namespace it is in, outermost first (its status's NSpid line);
// empty when it is gone.
std::vector<pid_t> namespace_ids(int process_dir) {
    const UniqueFd status{::openat(process_dir, "status", O_RDONLY | O_CLOEXEC)};
    if (!status) {
        return {};
    }
    const std::string text = tea::read_all(status.get());
    const auto line = text.find("\nNSpid:");
    if (line == std::string::npos) {
        return {};
    }
    // The line alone (substr clamps a count past the end).
    const auto end = text.find('\n', line + 1);
    return pids_in(std::string_view{text}.substr(line, end - line));
}

UniqueFd open_process(int proc, pid_t pid) {
    return UniqueFd{
        ::openat(proc, std::to_string(pid).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
}

}  // namespace

int signal_namespace_inits(const std::vector<pid_t> &roots, int signal_number) {
    const UniqueFd proc{::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (!proc) {
        return 0;
    }
    const UniqueFd self{::openat(proc.get(), "self", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    const auto own_depth = self ? namespace_ids(self.get()).size() : 0;
    if (own_depth == 0) {
        return 0;  // no NSpid to tell namespaces apart by
    }
    std::deque<pid_t> waiting;
    for (const pid_t root : roots) {
        if (root > 0) {
            waiting.push_back(root);
        }
    }
    int signalled = 0;
    std::size_t walked = 0;
    while (!waiting.empty() && walked < max_walked) {
        const pid_t pid = waiting.front();
        waiting.pop_front();
        ++walked;
        // Everything below is read through this descriptor, which names this very process: one
        // that ended meanwhile answers nothing, whoever has its id now.
        const UniqueFd process = open_process(proc.get(), pid);
        if (!process) {
            continue;
        }
        const auto ids = namespace_ids(process.get());
        if (ids.size() > own_depth) {
            if (ids.back() == 1 &&
                ::syscall(SYS_pidfd_send_signal, process.get(), signal_number, nullptr, 0U) == 0) {
                ++signalled;
            }
            continue;  // what runs in that namespace is its init's to reach
        }
        for (const pid_t child : children_of(process.get())) {
            waiting.push_back(child);
        }
    }
    return signalled;
}

}  // namespace tea::exec::detail
