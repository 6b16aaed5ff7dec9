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
        const auto role = spec.value("role", nlohmann::json("target"));
        // Even a backend that confines nothing says so for the role it was given, never another.
        if (role != "target" && role != "grader") {
            throw tea::sdk::Invalid(
                R"(role: expected "target" or "grader", got )" +
                role.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace));
        }
        nlohmann::json plan{{"argv", spec.at("argv")},
                            {"env", spec.at("env")},
                            {"cwd", spec.at("cwd")},
                            {"files", nlohmann::json::array()},
                            {"confinement", "opt-out"}};
        if (spec.contains("unmade")) {
            // The target keeps the host's environment, so nothing of it names the call's
            // directories: there is nothing to make.
            plan["makeDirs"] = nlohmann::json::array();
        }
        if (role == "grader") {
            // The record must not suggest that the evaluation folder or git directory was guarded.
            plan["report"] = {{"role", "grader"}, {"graderView", "not applied"}};
        }
        return plan.dump();
    }
};

}  // namespace

TEA_SDK_BACKEND_PLUGIN(OptOut, "opt-out", "1.0.0", TEA_ABI_1_6)
