#include <iomanip>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "util/console.hpp"

namespace tea::cli {

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
    if (common.json) {
        console::out() << nlohmann::json{{"plugins", list}}.dump(2) << '\n';
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
    return 0;
}

}  // namespace tea::cli
