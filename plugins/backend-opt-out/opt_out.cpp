// The opt-out backend: the identity transform. The target runs exactly as the
// launch spec describes it, with no confinement of any kind; every record of
// the call says "opt-out".
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tea/documents.hpp>
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
        tea::documents::LaunchSpec spec;
        try {
            // Even a backend that confines nothing says so for the role it was given, never
            // another: the decoder refuses a role it does not know.
            spec = tea::documents::decode_launch_spec(spec_json);
        } catch (const tea::documents::DocumentError &e) {
            throw tea::sdk::Invalid(e.what());
        }
        tea::documents::ExecPlan plan;
        plan.argv = spec.argv;
        if (!spec.bridge.dir.empty()) {
            if (spec.role == "grader") {
                throw tea::sdk::Invalid("a grader starts no service and takes no bridge");
            }
            // The same relay as a confining backend runs, unconfined, so the host's side of the
            // bridge is the same: it listens in the bridge's directory beside the target.
            plan.argv = {spec.bridge.relay, "--socket", spec.bridge.dir + "/bridge.sock", "--"};
            plan.argv.insert(plan.argv.end(), spec.argv.begin(), spec.argv.end());
        }
        plan.env = spec.env;
        plan.cwd = spec.cwd;
        plan.confinement = "opt-out";
        // loginFiles (ABI 1.8) is ignored: the target keeps the host's HOME and reads a login's
        // files where the user keeps them; there is no private home to show them in.
        if (!spec.unmade.empty()) {
            // The target keeps the host's environment, so nothing of it names the call's
            // directories: there is nothing to make.
            plan.make_dirs.emplace();
        }
        if (spec.role == "grader") {
            // The record must not suggest that the evaluation folder or git directory was guarded.
            plan.report_json = R"({"role":"grader","graderView":"not applied"})";
        }
        return tea::documents::encode(plan);
    }
};

}  // namespace

TEA_SDK_BACKEND_PLUGIN(OptOut, "opt-out", "1.0.0", TEA_ABI_1_9)
