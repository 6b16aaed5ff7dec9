// An out-of-tree backend that runs its target unconfined, named as execvp would find it with the
// launch spec's PATH (tea/program_path.hpp), and refuses a target the call could not execute,
// saying whether it is missing or may not be executed. It reads only what ABI 1.0 sends.
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tea/plugin.hpp>
#include <tea/program_path.hpp>

namespace {

using nlohmann::json;

class Which {
   public:
    Which(tea::sdk::Host /*host*/, std::string_view /*config_json*/) {}

    void probe() {}

    std::string prepare(std::string_view spec_json) {
        const auto spec = json::parse(spec_json);
        auto argv = spec.at("argv");
        std::optional<std::string> path;
        for (const auto &entry : spec.at("env")) {
            if (entry.is_string() && entry.get<std::string>().rfind("PATH=", 0) == 0) {
                path = entry.get<std::string>().substr(5);
            }
        }
        const auto name = argv.at(0).get<std::string>();
        const auto found = tea::program_path::resolve(
            name, path ? std::optional<std::string_view>{*path} : std::nullopt);
        if (!found) {
            throw tea::sdk::Invalid(
                "oot-which: " + name + ": " +
                (found.error == EACCES   ? std::string{"found, but not executable (EACCES)"}
                 : found.error == ENOENT ? std::string{"not found (ENOENT)"}
                                         : std::string{std::strerror(found.error)}));
        }
        argv[0] = found.path;
        return json{{"argv", argv},
                    {"env", spec.at("env")},
                    {"cwd", spec.at("cwd")},
                    {"files", json::array()},
                    {"confinement", "opt-out"}}
            .dump();
    }
};

}  // namespace

TEA_SDK_BACKEND_PLUGIN(Which, "oot-which", "1.0.0", TEA_ABI_1_0)
