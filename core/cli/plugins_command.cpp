#include <iomanip>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "util/console.hpp"

namespace tea::cli {
namespace {

// What a call would take on this host for one kind: the plugin the configuration names, or under
// "auto" the first name of its order that loaded as that kind and is available, as the selection
// (plugins/selection.hpp) takes it, from the probes this command made already.
nlohmann::json selection_of(const nlohmann::json &list, std::string_view kind,
                            const std::string &setting, const std::vector<std::string> &order) {
    nlohmann::json out{{"setting", setting}, {"selected", nullptr}};
    if (setting != "auto") {
        if (setting != "none") {
            out["selected"] = setting;
        }
        return out;
    }
    out["order"] = order;
    for (const auto &name : order) {
        for (const auto &item : list) {
            if (item["name"] == name && item["kind"] == kind && item["loaded"].get<bool>() &&
                item["available"].get<bool>()) {
                out["selected"] = name;
                return out;
            }
        }
    }
    return out;
}

// "backend: bubblewrap (confinement.backend = "auto": the first available of bubblewrap, ...)"
std::string selection_line(std::string_view kind, std::string_view key,
                           const nlohmann::json &selection) {
    std::string line{kind};
    line += ": ";
    line += selection["selected"].is_null() ? std::string{"none"}
                                            : selection["selected"].get<std::string>();
    line += " (";
    line += key;
    line += " = \"" + selection["setting"].get<std::string>() + "\"";
    if (selection.contains("order")) {
        line +=
            selection["selected"].is_null() ? ": none available of " : ": the first available of ";
        std::string names;
        for (const auto &name : selection["order"]) {
            names += (names.empty() ? "" : ", ") + name.get<std::string>();
        }
        line += names.empty() ? std::string{"an empty list"} : names;
    }
    return line + ")\n";
}

}  // namespace

int plugins_command(const CommonOptions &common) {
    const auto runtime = load_runtime(common);
    auto list = nlohmann::json::array();
    for (const auto &entry : runtime.registry.entries()) {
        nlohmann::json item{
            {"manifest", entry.manifest_file.string()},
            {"name", entry.name},
            {"kind", entry.kind ? std::string{plugins::to_string(*entry.kind)} : ""}};
        if (!entry.plugin) {
            item["loaded"] = false;
            item["available"] = false;
            item["reason"] = entry.refusal;
            list.push_back(item);
            continue;
        }
        const auto &p = *entry.plugin;
        item["loaded"] = true;
        item["version"] = p.version();
        item["abi"] = std::to_string(p.abi_major()) + "." + std::to_string(p.abi_minor());
        item["library"] = p.manifest().library.string();
        try {
            const auto instance = p.create(runtime.config.plugin_config_json(p.name()));
            const auto probe = instance->probe();
            item["available"] = probe.available;
            item["reason"] = probe.reason;
        } catch (const std::exception &e) {
            item["available"] = false;
            item["reason"] = e.what();
        }
        list.push_back(item);
    }
    const auto &config = runtime.config;
    const nlohmann::json selected{
        {"backend", selection_of(list, "backend", config.backend, config.backend_order)},
        {"observer", selection_of(list, "observer", config.observer, config.observer_order)}};
    if (common.json) {
        console::out() << nlohmann::json{{"plugins", list}, {"selected", selected}}.dump(2) << '\n';
        return 0;
    }
    if (list.empty()) {
        console::out() << "no plugins found\n";
        return 0;
    }
    for (const auto &item : list) {
        auto entry = console::out();  // an entry's lines, written together
        entry << std::left << std::setw(14) << item["name"].get<std::string>() << ' '
              << std::setw(9) << item["kind"].get<std::string>() << ' ';
        if (item["loaded"].get<bool>()) {
            entry << "ABI " << item["abi"].get<std::string>() << "  "
                  << (item["available"].get<bool>() ? "available" : "unavailable") << "  "
                  << item["library"].get<std::string>() << '\n';
            if (!item["available"].get<bool>()) {
                entry << "    reason: " << item["reason"].get<std::string>() << '\n';
            }
        } else {
            entry << "refused  " << item["manifest"].get<std::string>() << '\n'
                  << "    reason: " << item["reason"].get<std::string>() << '\n';
        }
    }
    console::out() << '\n'
                   << selection_line("backend", "confinement.backend", selected["backend"])
                   << selection_line("observer", "audit.observer", selected["observer"]);
    return 0;
}

}  // namespace tea::cli
