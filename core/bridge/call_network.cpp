#include "bridge/call_network.hpp"

#include <sys/stat.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <string>

namespace tea::bridge {
namespace {

std::optional<std::pair<dev_t, ino_t>> network_of(const std::string &proc_dir) {
    struct stat st {};
    if (::stat((proc_dir + "/ns/net").c_str(), &st) != 0) {
        return std::nullopt;
    }
    return std::pair{st.st_dev, st.st_ino};
}

}  // namespace

// Breadth first, so the first process found is the one bwrap made in the new namespaces, before
// any of the target's code ran. A target cannot stand in with a network of its own: making one
// needs CAP_SYS_ADMIN in a user namespace, and the confined target has no capability and may make
// no user namespace (bwrap's --disable-userns and the seccomp filter), so every process below
// bwrap shares the call's network.
std::optional<pid_t> process_in_call_network(pid_t root) {
    const auto own = network_of("/proc/self");
    if (!own || root <= 0) {
        return std::nullopt;
    }
    std::deque<pid_t> queue{root};
    while (!queue.empty()) {
        const pid_t pid = queue.front();
        queue.pop_front();
        const auto dir = "/proc/" + std::to_string(pid);
        const auto net = network_of(dir);
        if (net && *net != *own) {
            return pid;
        }
        // Children of every thread: bwrap's and a runtime's children need not be the main
        // thread's.
        std::error_code ec;
        for (const auto &task : std::filesystem::directory_iterator(dir + "/task", ec)) {
            std::ifstream children(task.path() / "children");
            pid_t child = 0;
            while (children >> child) {
                queue.push_back(child);
            }
        }
    }
    return std::nullopt;
}

}  // namespace tea::bridge
