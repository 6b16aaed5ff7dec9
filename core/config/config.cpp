#include "config/config.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "config/slurm_lease.hpp"
#include "util/closest_match.hpp"
#include "util/error.hpp"
#include "util/plugin_name.hpp"
#include "util/toml.hpp"
#include "util/wait_limit.hpp"

namespace tea::config {
namespace {

// "file:line:col: key: message" — the form every configuration error takes.
Error config_error(const std::string &origin, const toml::source_region &where,
                   const std::string &key, const std::string &message) {
    std::ostringstream out;
    out << origin;
    if (where.begin.line != 0) {
        out << ':' << where.begin.line << ':' << where.begin.column;
    }
    out << ": " << key << ": " << message;
    return usage_error(out.str());
}

const char *type_name(const toml::node &node) {
    switch (node.type()) {
        case toml::node_type::table:
            return "a table";
        case toml::node_type::array:
            return "an array";
        case toml::node_type::string:
            return "a string";
        case toml::node_type::integer:
            return "an integer";
        case toml::node_type::floating_point:
            return "a float";
        case toml::node_type::boolean:
            return "a boolean";
        default:
            return "a date or time";
    }
}

nlohmann::json to_json(const toml::node &node) {
    switch (node.type()) {
        case toml::node_type::table: {
            auto out = nlohmann::json::object();
            for (const auto &[key, value] : *node.as_table()) {
                out[std::string{key.str()}] = to_json(value);
            }
            return out;
        }
        case toml::node_type::array: {
            auto out = nlohmann::json::array();
            for (const auto &value : *node.as_array()) {
                out.push_back(to_json(value));
            }
            return out;
        }
        case toml::node_type::string:
            return node.as_string()->get();
        case toml::node_type::integer:
            return node.as_integer()->get();
        case toml::node_type::floating_point:
            return node.as_floating_point()->get();
        case toml::node_type::boolean:
            return node.as_boolean()->get();
        default: {
            // Dates and times, as TOML writes them. Tables and arrays are handled above; the
            // TOML writer (and its libm use) stays out of the binary (TOML_ENABLE_FORMATTERS=0).
            std::ostringstream text;
            if (const auto *d = node.as_date()) {
                text << d->get();
            } else if (const auto *t = node.as_time()) {
                text << t->get();
            } else if (const auto *dt = node.as_date_time()) {
                text << dt->get();
            }
            return text.str();
        }
    }
}

// Objects merge key by key; anything else is replaced.
void merge_into(nlohmann::json &base, const nlohmann::json &layer) {
    if (!base.is_object() || !layer.is_object()) {
        base = layer;
        return;
    }
    for (const auto &[key, value] : layer.items()) {
        if (base.contains(key)) {
            merge_into(base[key], value);
        } else {
            base[key] = value;
        }
    }
}

class LayerReader {
   public:
    LayerReader(Config &config, std::string origin, std::filesystem::path base_dir)
        : config_(config), origin_(std::move(origin)), base_dir_(std::move(base_dir)) {}

    void read(const toml::table &root) {
        for (const auto &[key, value] : root) {
            const std::string name{key.str()};
            if (name == "confinement") {
                confinement(table(value, name));
            } else if (name == "audit") {
                audit(table(value, name));
            } else if (name == "plugins") {
                plugins(table(value, name));
            } else if (name == "call") {
                call(table(value, name));
            } else if (name == "egress") {
                egress(table(value, name));
            } else if (name == "budgets") {
                budgets(table(value, name));
            } else if (name == "detectors") {
                detectors(table(value, name));
            } else if (name == "executor") {
                executor(table(value, name));
            } else if (name == "plugin") {
                plugin_tables(table(value, name));
            } else {
                unknown(key, name,
                        {"confinement", "audit", "plugins", "call", "egress", "budgets",
                         "detectors", "executor", "plugin"});
            }
        }
    }

   private:
    const toml::table &table(const toml::node &node, const std::string &key) {
        if (!node.is_table()) {
            throw config_error(origin_, node.source(), key,
                               std::string{"expected a table, found "} + type_name(node));
        }
        return *node.as_table();
    }
    std::string string(const toml::node &node, const std::string &key) {
        if (!node.is_string()) {
            throw config_error(origin_, node.source(), key,
                               std::string{"expected a string, found "} + type_name(node));
        }
        return node.as_string()->get();
    }
    std::vector<std::string> strings(const toml::node &node, const std::string &key) {
        if (!node.is_array()) {
            throw config_error(
                origin_, node.source(), key,
                std::string{"expected an array of strings, found "} + type_name(node));
        }
        std::vector<std::string> out;
        std::size_t index = 0;
        for (const auto &item : *node.as_array()) {
            out.push_back(string(item, key + "[" + std::to_string(index++) + "]"));
        }
        return out;
    }
    std::int64_t integer(const toml::node &node, const std::string &key, std::int64_t min,
                         std::optional<std::int64_t> max = std::nullopt) {
        if (!node.is_integer()) {
            throw config_error(origin_, node.source(), key,
                               std::string{"expected an integer, found "} + type_name(node));
        }
        const auto value = node.as_integer()->get();
        if (value < min) {
            throw config_error(
                origin_, node.source(), key,
                "expected at least " + std::to_string(min) + ", found " + std::to_string(value));
        }
        if (max && value > *max) {
            throw config_error(
                origin_, node.source(), key,
                "expected at most " + std::to_string(*max) + ", found " + std::to_string(value));
        }
        return value;
    }
    [[noreturn]] void unknown(const toml::key &key, const std::string &path,
                              const std::vector<std::string> &known) {
        throw config_error(origin_, key.source(), path,
                           "unknown key (known keys here: " + listed(known) + ")" +
                               did_you_mean(key.str(), known));
    }
    std::string plugin_name(const std::string &name, const std::string &key,
                            const toml::node &node) {
        if (!is_valid_plugin_name(name)) {
            throw config_error(origin_, node.source(), key,
                               "'" + name + "' is not a valid plugin name");
        }
        return name;
    }

    void confinement(const toml::table &t) {
        for (const auto &[key, value] : t) {
            const std::string name{key.str()};
            const std::string path = "confinement." + name;
            if (name == "backend") {
                config_.backend = plugin_name(string(value, path), path, value);
            } else if (name == "auto_order") {
                config_.backend_order = strings(value, path);
                for (const auto &item : config_.backend_order) {
                    plugin_name(item, path, value);
                }
            } else if (name == "opt_out_backend") {
                config_.opt_out_backend = plugin_name(string(value, path), path, value);
            } else if (name == "uid_range") {
                config_.uid_range = uid_range(value, path);
            } else {
                unknown(key, path, {"backend", "auto_order", "opt_out_backend", "uid_range"});
            }
        }
    }
    // [FIRST, LAST], or [] for none.
    std::optional<UidRange> uid_range(const toml::node &node, const std::string &key) {
        const auto *items = node.as_array();
        if (items != nullptr && items->empty()) {
            return std::nullopt;
        }
        if (items == nullptr || items->size() != 2) {
            throw config_error(origin_, node.source(), key,
                               "expected [FIRST, LAST] (two ids), or [] for none");
        }
        const auto first = integer((*items)[0], key + "[0]", 1);
        const auto last = integer((*items)[1], key + "[1]", first);
        constexpr std::int64_t highest = 0xFFFFFFFE;  // (uid_t)-1 means "no change"
        // The id the kernel shows for owners a mapping leaves out: a target running as it would
        // be the owner of every such file in its view of an idmapped tree.
        constexpr std::int64_t overflow = 65534;
        if (last > highest || (first <= overflow && overflow <= last) ||
            (first <= 65535 && 65535 <= last)) {
            throw config_error(origin_, node.source(), key,
                               "the range " + std::to_string(first) + "-" + std::to_string(last) +
                                   " holds 65534, 65535 or an id above 4294967294; none of them "
                                   "can be a call's identity");
        }
        return UidRange{static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(last)};
    }
    void audit(const toml::table &t) {
        for (const auto &[key, value] : t) {
            const std::string name{key.str()};
            const std::string path = "audit." + name;
            if (name == "observer") {
                config_.observer = plugin_name(string(value, path), path, value);
            } else if (name == "auto_order") {
                config_.observer_order = strings(value, path);
                for (const auto &item : config_.observer_order) {
                    plugin_name(item, path, value);
                }
            } else {
                unknown(key, path, {"observer", "auto_order"});
            }
        }
    }
    void egress(const toml::table &t) {
        for (const auto &[key, value] : t) {
            const std::string name{key.str()};
            const std::string path = "egress." + name;
            if (name == "plugin") {
                config_.egress = plugin_name(string(value, path), path, value);
            } else {
                unknown(key, path, {"plugin"});
            }
        }
    }
    void plugins(const toml::table &t) {
        for (const auto &[key, value] : t) {
            const std::string name{key.str()};
            const std::string path = "plugins." + name;
            if (name == "paths") {
                config_.plugin_paths_layer = config_.layers.size();  // this layer's index
                config_.plugin_paths.clear();
                for (const auto &item : strings(value, path)) {
                    config_.plugin_paths.push_back(base_dir_ /
                                                   item);  // absolute items stay as they are
                }
            } else {
                unknown(key, path, {"paths"});
            }
        }
    }
    void call(const toml::table &t) {
        for (const auto &[key, value] : t) {
            const std::string name{key.str()};
            const std::string path = "call." + name;
            if (name == "output_cap_bytes") {
                config_.call.output_cap_bytes = static_cast<std::uint64_t>(integer(value, path, 0));
            } else if (name == "kill_grace_ms") {
                config_.call.kill_grace =
                    std::chrono::milliseconds{integer(value, path, 0, max_wait_ms)};
            } else {
                unknown(key, path, {"output_cap_bytes", "kill_grace_ms"});
            }
        }
    }
    void budgets(const toml::table &t) {
        constexpr std::int64_t min_memory = std::int64_t{16} << 20U;  // below it nothing starts
        constexpr std::int64_t min_disk = std::int64_t{1} << 20U;
        auto &b = config_.budgets;
        for (const auto &[key, value] : t) {
            const std::string name{key.str()};
            const std::string path = "budgets." + name;
            if (name == "memory") {
                if (value.is_string()) {
                    b.memory_percent = percent(value, path);
                    b.memory_bytes = 0;
                } else {
                    const auto bytes = integer(value, path, 0);
                    if (bytes != 0 && bytes < min_memory) {
                        throw config_error(origin_, value.source(), path,
                                           "expected 0 (unbounded), at least " +
                                               std::to_string(min_memory) +
                                               " bytes or a share such as \"50%\", found " +
                                               std::to_string(bytes));
                    }
                    b.memory_bytes = static_cast<std::uint64_t>(bytes);
                    b.memory_percent = 0;
                }
            } else if (name == "processes") {
                b.processes = static_cast<std::uint64_t>(integer(value, path, 0));
            } else if (name == "cgroup") {
                b.cgroups = choice(value, path, {"auto", "off"}) == "auto";
            } else if (name == "disk") {
                b.disk = choice(value, path, {"tmpfs", "image", "none"});
            } else if (name == "disk_bytes") {
                b.disk_bytes = static_cast<std::uint64_t>(integer(value, path, min_disk));
            } else {
                unknown(key, path, {"memory", "processes", "cgroup", "disk", "disk_bytes"});
            }
        }
    }
    void detectors(const toml::table &t) {
        for (const auto &[key, value] : t) {
            const std::string name{key.str()};
            const std::string path = "detectors." + name;
            if (name == "host_unchanged") {
                config_.host_unchanged.clear();
                std::size_t index = 0;
                for (const auto &item : strings(value, path)) {
                    const auto at = path + "[" + std::to_string(index++) + "]";
                    if (item.empty()) {
                        throw config_error(origin_, value.source(), at, "expected a path");
                    }
                    // Relative to the file that names it, as plugins.paths.
                    config_.host_unchanged.push_back((base_dir_ / item).lexically_normal());
                }
            } else {
                unknown(key, path, {"host_unchanged"});
            }
        }
    }
    void executor(const toml::table &t) {
        auto &e = config_.executor;
        for (const auto &[key, value] : t) {
            const std::string name{key.str()};
            const std::string path = "executor." + name;
            if (name == "kind") {
                e.kind = choice(value, path, {"local", "slurm"});
            } else if (name == "jobs") {
                e.jobs = static_cast<int>(integer(value, path, 1, 64));
            } else if (name == "retries") {
                e.retries = static_cast<int>(integer(value, path, 0, 1));
            } else if (name == "slurm_pending_limit_s") {
                e.slurm_pending_limit_s = integer(value, path, 1, 604800);
            } else if (name == "slurm_lease_s") {
                e.slurm_lease_s = integer(value, path, kShortestSlurmLeaseS, kLongestSlurmLeaseS);
            } else if (name == "slurm_partition") {
                e.slurm_partition = slurm_word(value, path);
            } else if (name == "slurm_account") {
                e.slurm_account = slurm_word(value, path);
            } else if (name == "slurm_options") {
                e.slurm_options = strings(value, path);
                std::size_t index = 0;
                for (const auto &option : e.slurm_options) {
                    slurm_option(option, path + "[" + std::to_string(index++) + "]", value);
                }
            } else {
                unknown(key, path,
                        {"kind", "jobs", "retries", "slurm_partition", "slurm_account",
                         "slurm_options", "slurm_pending_limit_s", "slurm_lease_s"});
            }
        }
    }
    // A partition's or an account's name: letters, digits and . _ - only, or "" for none.
    std::string slurm_word(const toml::node &node, const std::string &key) {
        auto word = string(node, key);
        for (const char c : word) {
            if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '_' &&
                c != '-') {
                throw config_error(origin_, node.source(), key,
                                   "'" + word + "' is not a Slurm name (letters, digits, . _ -)");
            }
        }
        return word;
    }
    // An sbatch option the executor does not set itself: the array, the script, the output files,
    // the working directory and the cluster are the run's (its squeue and scancel ask the cluster
    // the array is on), and a second value would take them over. sbatch takes a long option by
    // any unambiguous prefix, so a prefix of one is refused too.
    void slurm_option(const std::string &option, const std::string &key, const toml::node &node) {
        static const std::vector<std::string> owned_long{"--array",  "--wrap",     "--parsable",
                                                         "--output", "--error",    "--chdir",
                                                         "--wait",   "--clusters", "--cluster"};
        static const std::string owned_short = "aoeDWM";
        const auto name = option.substr(0, option.find('='));
        const bool is_long = option.rfind("--", 0) == 0;
        const bool taken =
            is_long
                ? name.size() > 2 &&
                      std::any_of(owned_long.begin(), owned_long.end(),
                                  [&](const std::string &o) { return o.rfind(name, 0) == 0; })
                // A short option may bundle others (-Qa1-2): any letter the executor owns.
                : option.size() >= 2 && option.find_first_of(owned_short, 1) != std::string::npos;
        if (option.size() < 2 || option[0] != '-' || taken) {
            throw config_error(origin_, node.source(), key,
                               "'" + option +
                                   "' is not an sbatch option the executor leaves to you: one "
                                   "option per item, its value attached (--mem=8G), and not one "
                                   "of the array, the script, the output files, the working "
                                   "directory or the cluster, which it sets itself");
        }
    }
    // "N%", N from 1 to 100.
    unsigned percent(const toml::node &node, const std::string &key) {
        const auto text = string(node, key);
        unsigned n = 0;
        const auto *end = text.data() + text.size();
        const auto [at, ec] = std::from_chars(text.data(), end, n);
        if (ec != std::errc{} || at == text.data() || at + 1 != end || *at != '%' || n == 0 ||
            n > 100) {
            throw config_error(origin_, node.source(), key,
                               "expected a number of bytes or a share of the host's memory "
                               "from \"1%\" to \"100%\", found \"" +
                                   text + "\"");
        }
        return n;
    }
    std::string choice(const toml::node &node, const std::string &key,
                       std::initializer_list<const char *> allowed) {
        auto text = string(node, key);
        std::string quoted;
        for (const char *a : allowed) {
            if (text == a) {
                return text;
            }
            quoted += (quoted.empty() ? "\"" : ", \"") + std::string{a} + "\"";
        }
        throw config_error(origin_, node.source(), key,
                           "expected one of " + quoted + ", found \"" + text + "\"" +
                               did_you_mean(text, {allowed.begin(), allowed.end()}));
    }
    void plugin_tables(const toml::table &t) {
        for (const auto &[key, value] : t) {
            const std::string name =
                plugin_name(std::string{key.str()}, "plugin." + std::string{key.str()}, value);
            // The plugin validates its own table; here it only has to be one.
            const auto &inner = table(value, "plugin." + name);
            auto &slot = config_.plugin_tables[name];
            if (slot.is_null()) {
                slot = nlohmann::json::object();
            }
            merge_into(slot, to_json(inner));
        }
    }

    Config &config_;
    std::string origin_;
    std::filesystem::path base_dir_;
};

}  // namespace

bool is_valid_plugin_name(std::string_view name) {
    return tea::is_valid_plugin_name(name);
}

std::uint64_t BudgetSettings::memory_on_host() const {
    if (memory_percent == 0) {
        return memory_bytes;
    }
    // "MemTotal:       24576000 kB"
    std::ifstream in{"/proc/meminfo"};
    std::string label;
    std::uint64_t kib = 0;
    in >> label >> kib;
    if (label != "MemTotal:" || kib == 0) {
        // Fail closed: a budget that cannot be computed is no budget, so none is guessed.
        throw runtime_failure("cannot read MemTotal from /proc/meminfo for budgets.memory = \"" +
                              std::to_string(memory_percent) + "%\"; set it in bytes");
    }
    return kib * 1024 / 100 * memory_percent;
}

std::string Config::plugin_config_json(std::string_view plugin_name) const {
    const auto it = plugin_tables.find(std::string{plugin_name});
    return it == plugin_tables.end() ? std::string{"{}"} : it->dump();
}

std::filesystem::path user_config_path() {
    // getenv is read once at start-up, before any thread runs.
    const char *xdg = std::getenv("XDG_CONFIG_HOME");  // NOLINT(concurrency-mt-unsafe)
    if (xdg != nullptr && xdg[0] == '/') {
        return std::filesystem::path{xdg} / "tea-evaluate" / "config.toml";
    }
    const char *home = std::getenv("HOME");  // NOLINT(concurrency-mt-unsafe)
    if (home != nullptr && home[0] == '/') {
        return std::filesystem::path{home} / ".config" / "tea-evaluate" / "config.toml";
    }
    return {};
}

Builder::Builder() {
    apply_text(embedded_default(), "<built-in default configuration>", std::filesystem::path{"/"});
}

void Builder::apply_text(std::string_view toml_text, const std::string &origin,
                         const std::filesystem::path &base_dir) {
    toml::table root;
    try {
        root = toml::parse(toml_text, origin);
    } catch (const toml::parse_error &e) {
        std::ostringstream out;
        out << origin << ':' << e.source().begin.line << ':' << e.source().begin.column
            << ": invalid TOML: " << e.description();
        throw usage_error(out.str());
    }
    // Read into a copy so a layer that fails half-way changes nothing.
    Config next = config_;
    LayerReader{next, origin, base_dir}.read(root);
    next.layers.push_back(origin);
    config_ = std::move(next);
}

void Builder::apply_file(const std::filesystem::path &file) {
    std::ifstream in{file, std::ios::binary};
    if (!in) {
        throw usage_error(file.string() +
                          ": cannot read the configuration file: " + errno_text(errno));
    }
    // A directory reads as empty and a device or fifo may never end: either would stand for a
    // configuration the user did not write.
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) {
        throw usage_error(file.string() +
                          ": the configuration file is not a regular file (a directory, a device "
                          "or a fifo)");
    }
    constexpr std::size_t max_config_bytes = 4U << 20U;  // a config is small; refuse a huge file
    std::string text(max_config_bytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_config_bytes) {
        throw usage_error(file.string() + ": the configuration file is larger than 4 MiB");
    }
    const auto absolute = std::filesystem::absolute(file);
    apply_text(text, file.string(), absolute.parent_path());
    config_.files_read.push_back(absolute.lexically_normal());
}

void Builder::apply_user_file(const std::filesystem::path &file) {
    apply_file(file);
    config_.user_file_layer = config_.layers.size() - 1;
}

void Builder::apply_flags(const std::optional<std::string> &backend,
                          const std::optional<std::string> &observer) {
    Config next = config_;
    if (backend) {
        if (!is_valid_plugin_name(*backend)) {
            throw usage_error("--backend: '" + *backend + "' is not a valid plugin name");
        }
        next.backend = *backend;
    }
    if (observer) {
        if (!is_valid_plugin_name(*observer)) {
            throw usage_error("--observer: '" + *observer + "' is not a valid plugin name");
        }
        next.observer = *observer;
    }
    if (backend || observer) {
        next.layers.emplace_back("<command-line flags>");
    }
    config_ = std::move(next);
}

Config load(const Sources &sources) {
    Builder builder;
    if (sources.read_user_file) {
        const auto user = sources.user_file.value_or(user_config_path());
        std::error_code ec;
        if (!user.empty() && std::filesystem::exists(user, ec)) {
            builder.apply_user_file(user);
        }
    }
    if (sources.explicit_file) {
        builder.apply_file(*sources.explicit_file);
    }
    builder.apply_flags(sources.backend_flag, sources.observer_flag);
    return builder.get();
}

}  // namespace tea::config
