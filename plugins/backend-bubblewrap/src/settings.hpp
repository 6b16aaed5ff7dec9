// The backend's [plugin.bubblewrap] table (plugins/backend-bubblewrap/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tea::bwrap {

struct Settings {
    std::string bwrap = "bwrap";
    std::string sandbox_user = "tea-sandbox";
    std::uint64_t cpu_seconds = 3600;
    std::uint64_t file_size_bytes = std::uint64_t{4} << 30U;
    // RLIMIT_NPROC counts every process of the identity on the host, so calls side by side (and
    // the observer's own fork) starve each other: off unless asked for. The runtime's per-call
    // process budget (a pids cgroup, [budgets] processes) bounds a call instead.
    std::uint64_t processes = 0;
    std::uint64_t tmpfs_bytes = std::uint64_t{256} << 20U;
    std::uint64_t call_dir_bytes = std::uint64_t{1} << 30U;
    std::size_t max_socket_masks = 1024;
    std::size_t socket_walk_entries = 50000;
    std::vector<std::string> socket_dirs{"/run", "/var/run", "/tmp", "/var/tmp"};
    std::vector<std::string> sys_paths{"/sys/devices/system/cpu"};
};

// The table as the host hands it to create (a JSON object); throws tea::sdk::Invalid naming the
// key for an unknown key or a bad value.
Settings parse_settings(std::string_view json);

}  // namespace tea::bwrap
