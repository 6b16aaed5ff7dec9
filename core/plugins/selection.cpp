#include "plugins/selection.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"

namespace tea::plugins {
namespace {

std::unique_ptr<Instance> create(const LoadedPlugin &plugin, const config::Config &config) {
    try {
        return plugin.create(config.plugin_config_json(plugin.name()));
    } catch (const std::exception &e) {
        throw usage_error(e.what());
    }
}

Selected select_named(const Registry &registry, const config::Config &config,
                      const std::string &name, Kind kind) {
    const auto &plugin = registry.require(name, kind);
    auto instance = create(plugin, config);
    const auto probe = instance->probe();
    if (!probe.available) {
        throw host_error("the " + std::string{to_string(kind)} + " '" + name +
                         "' cannot work on this host: " + probe.reason);
    }
    return Selected{&plugin, std::move(instance), false};
}

}  // namespace

SearchPath manifest_search_path(const config::Config &config, const RuntimePaths &paths,
                                bool as_root, const char *plugin_path_variable) {
    SearchPath out;
    // A developer's build first, so it may stand in for an installed plugin of the same name.
    // As root its folders pass the same ownership checks as any other (trust.hpp).
    for (std::string_view rest = plugin_path_variable != nullptr ? plugin_path_variable : "";
         !rest.empty();) {
        const auto colon = rest.find(':');
        const auto entry = rest.substr(0, colon);
        if (!entry.empty()) {
            out.dirs.emplace_back(entry);
        }
        rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
    out.dirs.push_back(paths.manifest_dir);
    out.dirs.push_back(paths.system_manifest_dir);
    const auto user = config::user_config_path();
    if (!user.empty()) {
        (as_root ? out.skipped : out.dirs).push_back(user.parent_path() / "plugins.d");
    }
    auto &configured = as_root && config.plugin_paths_from_user_file() ? out.skipped : out.dirs;
    configured.insert(configured.end(), config.plugin_paths.begin(), config.plugin_paths.end());
    return out;
}

std::vector<std::filesystem::path> manifest_search_path(const config::Config &config,
                                                        const RuntimePaths &paths) {
    auto search =
        manifest_search_path(config, paths, ::geteuid() == 0,
                             // Read once at start-up, before any thread runs.
                             ::secure_getenv("TEA_PLUGIN_PATH"));  // NOLINT(concurrency-mt-unsafe)
    std::string skipped;
    for (const auto &dir : search.skipped) {
        std::error_code ec;
        if (std::filesystem::exists(dir, ec)) {
            skipped += (skipped.empty() ? "" : ", ") + dir.string();
        }
    }
    if (!skipped.empty()) {
        spdlog::warn(
            "running as root, the plugins of the user's folders are not loaded: {} (install them "
            "in {})",
            skipped, paths.system_manifest_dir.string());
    }
    return std::move(search.dirs);
}

Selected select_backend(const Registry &registry, const config::Config &config) {
    if (config.backend != "auto") {
        return select_named(registry, config, config.backend, Kind::backend);
    }
    std::string reasons;
    for (const auto &name : config.backend_order) {
        const auto *entry = registry.find(name);
        std::string reason;
        if (entry == nullptr) {
            reason = "not installed";
        } else if (!entry->plugin) {
            reason = entry->refusal;
        } else if (entry->plugin->kind() != Kind::backend) {
            reason = "not a backend plugin";
        } else {
            auto instance = create(*entry->plugin, config);
            auto probe = instance->probe();
            if (probe.available) {
                return Selected{entry->plugin.get(), std::move(instance), true};
            }
            reason = probe.reason;
        }
        reasons += "\n  ";
        reasons += name;
        reasons += ": ";
        reasons += reason;
    }
    throw host_error(
        "no confinement backend is available on this host (confinement.backend = \"auto\" tried "
        "them in the order of confinement.auto_order):" +
        reasons +
        "\nInstall or repair one of them, or run unconfined on purpose with --backend opt-out.");
}

Selected select_observer(const Registry &registry, const config::Config &config) {
    if (config.observer == "none") {
        return {};
    }
    if (config.observer != "auto") {
        return select_named(registry, config, config.observer, Kind::observer);
    }
    std::string reasons;
    std::vector<std::pair<std::string, std::string>> cannot_work;  // installed, probe refused
    for (const auto &name : config.observer_order) {
        const auto *entry = registry.find(name);
        if (entry == nullptr) {
            reasons += "\n  " + name + ": not installed";
            continue;
        }
        if (!entry->plugin) {
            reasons += "\n  " + name + ": " + entry->refusal;
            continue;
        }
        if (entry->plugin->kind() != Kind::observer) {
            reasons += "\n  " + name + ": not an observer plugin";
            continue;
        }
        // The first observer of the order that can work here audits the call; one that cannot
        // passes to the next, which audits as well. None that can stops the command: "auto"
        // never falls through to an unaudited call.
        auto instance = create(*entry->plugin, config);
        const auto probe = instance->probe();
        if (probe.available) {
            for (const auto &[skipped, why] : cannot_work) {
                spdlog::info("the observer '{}' cannot audit calls on this host ({}); using '{}'",
                             skipped, why, name);
            }
            return Selected{entry->plugin.get(), std::move(instance), true};
        }
        cannot_work.emplace_back(name, probe.reason);
        reasons += "\n  " + name + ": " + probe.reason;
    }
    if (cannot_work.size() == 1) {
        throw host_error("the observer '" + cannot_work[0].first +
                         "' cannot audit calls on this host: " + cannot_work[0].second +
                         "\nRepair it, or run unaudited on purpose with --observer none.");
    }
    if (!cannot_work.empty()) {
        throw host_error(
            "no observer can audit the call on this host (audit.observer = \"auto\" tried "
            "audit.auto_order):" +
            reasons + "\nRepair one of them, or run unaudited on purpose with --observer none.");
    }
    throw host_error(
        "no observer is installed to audit the call (audit.observer = \"auto\" looked for "
        "audit.auto_order):" +
        reasons +
        "\nInstall one (the strace observer on Linux), or run unaudited on purpose "
        "with --observer none.");
}

Selected select_egress(const Registry &registry, const config::Config &config) {
    if (config.egress.empty()) {
        throw usage_error(
            "the call lists egress hosts, but no egress plugin is configured (set "
            "egress.plugin)");
    }
    return select_named(registry, config, config.egress, Kind::egress);
}

Selected select_login(const Registry &registry, const config::Config &config,
                      const std::string &name) {
    return select_named(registry, config, name, Kind::login);
}

}  // namespace tea::plugins
