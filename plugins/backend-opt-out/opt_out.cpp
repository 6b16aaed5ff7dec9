// The opt-out backend: the identity transform. The target runs exactly as the
// launch spec describes it, with no confinement of any kind; every record of
// the call says "opt-out".
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tea/json_bytes.hpp>
#include <tea/plugin.hpp>

namespace {

class OptOut {
   public:
    OptOut(tea::sdk::Host /*host*/, std::string_view config_json) {
        const auto config = nlohmann::json::parse(config_json, nullptr, false);
        if (!config.is_object() || !config.empty()) {
            throw tea::sdk::Invalid(
                "the opt-out backend takes no configuration "
                "([plugin.opt-out] must be empty)");
        }
    }

    void probe() {}  // always available: it needs nothing from the host

    std::string prepare(std::string_view spec_json) {
        const auto spec = nlohmann::json::parse(spec_json);
        const nlohmann::json plan{{"argv", spec.at("argv")},
                                  {"env", spec.at("env")},
                                  {"cwd", spec.at("cwd")},
                                  {"files", nlohmann::json::array()},
                                  {"confinement", "opt-out"}};
        return plan.dump();
    }
};

}  // namespace

TEA_SDK_BACKEND_PLUGIN(OptOut, "opt-out", "1.0.0")
