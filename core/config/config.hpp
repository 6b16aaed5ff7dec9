// The runtime's configuration: the embedded default, then the user's file,
// then --config FILE, then command-line flags, each layer overriding the last.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tea::config {

struct CallSettings {
    // Bytes kept of each of a call's stdout and stderr; the rest is counted, not kept.
    std::uint64_t output_cap_bytes = 0;
    // Between SIGTERM and SIGKILL when a call is ended.
    std::chrono::milliseconds kill_grace{0};
};

// Ids a root runtime gives each call's target, one of them per call (see exec/call_identity.hpp).
struct UidRange {
    std::uint32_t first = 0;
    std::uint32_t last = 0;  // inclusive
    bool operator==(const UidRange &) const = default;
};

// [budgets]: what one call may consume, and the bounded file system of a run's trial
// (docs/configuration.md). A run's evaluation.json and its registry entries may set their own.
struct BudgetSettings {
    // The memory budget: a number of bytes, or (when memory_percent is set) a share of the host's
    // memory (MemTotal). 0 and 0: unbounded.
    std::uint64_t memory_bytes = 0;
    unsigned memory_percent = 0;
    std::uint64_t processes = 0;  // 0: unbounded
    bool cgroups = true;          // "auto": a cgroup where the host has one; "off": rlimits only
    std::string disk = "tmpfs";   // a trial's file system: "tmpfs", "image" or "none"
    std::uint64_t disk_bytes = 0;

    // The memory budget in bytes on this host.
    [[nodiscard]] std::uint64_t memory_on_host() const;
};

// [executor]: what makes a run's trials (docs/scale-out.md).
struct ExecutorSettings {
    std::string kind = "local";              // "local": this machine; "slurm": a job array
    int jobs = 1;                            // trials at once (slurm: the array's throttle)
    std::string slurm_partition;             // "": sbatch's default
    std::string slurm_account;               // "": sbatch's default
    std::vector<std::string> slurm_options;  // further sbatch arguments, one per item
    // A trial whose task ended without a whole outcome (killed, cancelled, its trial.json missing
    // or torn) is made again this many times (0 or 1); a verdict is never made again.
    int retries = 0;
    // How long a Slurm job may wait with none of its tasks running before it is cancelled (a
    // held job, a time limit above the partition's), its trials then infrastructure errors.
    std::int64_t slurm_pending_limit_s = 3600;
    // How long the coordinator may go without renewing its lease before its tasks take it for
    // gone and make no more trials, and a later run cancels its jobs (coordinator_lease.hpp).
    std::int64_t slurm_lease_s = 120;
};

struct Config {
    std::string backend;                     // "auto" or a backend plugin's name
    std::vector<std::string> backend_order;  // what "auto" tries, first available wins
    // The backend a run uses when its evaluation sets "confinement": false.
    std::string opt_out_backend = "opt-out";
    // [confinement] uid_range; none: the backend's own identity (the sandbox account) for all.
    std::optional<UidRange> uid_range;
    std::string observer;                             // "auto", "none" or an observer's name
    std::vector<std::string> observer_order;          // what "auto" tries, first installed wins
    std::vector<std::filesystem::path> plugin_paths;  // extra manifest directories
    std::string egress;  // the egress plugin serving calls that list hosts
    CallSettings call;
    BudgetSettings budgets;
    ExecutorSettings executor;
    // [detectors] host_unchanged: host files and trees outside the workspace that no run's target
    // may change, compared before and after each run (evaluation/leak_detectors.hpp).
    std::vector<std::filesystem::path> host_unchanged;
    nlohmann::json plugin_tables = nlohmann::json::object();  // name -> table as JSON
    std::vector<std::string> layers;  // where each layer came from, in order
    // Every configuration file read, by its absolute path (a relative --config made absolute).
    std::vector<std::filesystem::path> files_read;
    // The layer (an index into layers) whose [plugins] paths are in force, and the layer that is
    // the user's own file (npos: none): a root runtime does not search paths a user chose.
    std::size_t plugin_paths_layer = std::string::npos;
    std::size_t user_file_layer = std::string::npos;

    [[nodiscard]] bool plugin_paths_from_user_file() const {
        return plugin_paths_layer != std::string::npos && plugin_paths_layer == user_file_layer;
    }

    // The plugin's table as a JSON object ("{}" when the configuration has none).
    [[nodiscard]] std::string plugin_config_json(std::string_view plugin_name) const;
};

// Where the command line points the configuration.
struct Sources {
    // The user's file; nullopt means the default location (user_config_path()).
    std::optional<std::filesystem::path> user_file;
    bool read_user_file = true;
    std::optional<std::filesystem::path> explicit_file;  // --config
    std::optional<std::string> backend_flag;             // --backend
    std::optional<std::string> observer_flag;            // --observer
};

// Letters, digits, '-', '_' and '.', not starting with '.' or '-', at most 64 bytes.
bool is_valid_plugin_name(std::string_view name);

// $XDG_CONFIG_HOME/tea-evaluate/config.toml, or ~/.config/tea-evaluate/config.toml.
std::filesystem::path user_config_path();

// The configuration built into the binary from config/default.toml.
std::string_view embedded_default();

// Applies layers in order. Every error is tea::Error with exit 2 and names the
// file, line and key.
class Builder {
   public:
    Builder();
    // A TOML document; origin names it in messages; relative paths resolve against base_dir.
    void apply_text(std::string_view toml_text, const std::string &origin,
                    const std::filesystem::path &base_dir);
    void apply_file(const std::filesystem::path &file);
    // apply_file for the user's own file (Sources::user_file), marked as such.
    void apply_user_file(const std::filesystem::path &file);
    void apply_flags(const std::optional<std::string> &backend,
                     const std::optional<std::string> &observer);
    [[nodiscard]] const Config &get() const { return config_; }

   private:
    Config config_;
};

Config load(const Sources &sources);

}  // namespace tea::config
