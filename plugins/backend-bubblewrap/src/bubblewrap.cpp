// The bubblewrap backend: a launch spec in, an exec plan out that runs the target under bwrap with
// its own user, pid, network, ipc and uts namespaces, a read-only view of /, and the call's
// directories bound in. Nothing runs in prepare; probe confines a trivial process to prove the
// host allows it.
//
// One mechanism per file: settings.cpp (the [plugin.bubblewrap] table), probe.cpp,
// target_call.cpp (a target's spec checked, and what follows from it), environment.cpp,
// login_files.cpp (a login's files shown read-only in the home),
// reach.cpp (what the target's identity can reach), view_list.cpp and socket_masks.cpp (the
// view), target_plan.cpp and grader_plan.cpp (plan assembly), command_line.cpp (bwrap's and its
// helpers' command lines), descriptors.hpp (the numbers the plan's files take).
#include <optional>
#include <string>
#include <string_view>
#include <tea/documents.hpp>
#include <tea/plugin.hpp>

#include "grader_plan.hpp"
#include "identity.hpp"
#include "probe.hpp"
#include "settings.hpp"
#include "target_call.hpp"
#include "target_plan.hpp"

namespace {

using tea::bwrap::Identity;

class Bubblewrap {
   public:
    Bubblewrap(tea::sdk::Host host, std::string_view config)
        : host_(host), settings_(tea::bwrap::parse_settings(config)) {}

    void probe() const { tea::bwrap::probe_confinement(settings_, sandbox_identity()); }

    std::string prepare(std::string_view text) const {
        tea::documents::LaunchSpec spec;
        try {
            spec = tea::documents::decode_launch_spec(text);
        } catch (const tea::documents::DocumentError &e) {
            throw tea::sdk::Invalid(e.what());
        }
        if (spec.argv.empty()) {
            throw tea::sdk::Invalid("the launch spec has no argv");
        }
        const auto plan =
            spec.role == "grader"
                ? tea::bwrap::grader_plan(settings_, spec)
                : tea::bwrap::target_plan(
                      settings_, tea::bwrap::target_call(settings_, spec, sandbox_identity()));
        return tea::documents::encode(plan);
    }

   private:
    // The account database is read once per process, not once per probe and call.
    const Identity &sandbox_identity() const {
        if (!identity_) {
            identity_ = tea::bwrap::sandbox_identity(settings_.sandbox_user);
        }
        return *identity_;
    }

    tea::sdk::Host host_;
    tea::bwrap::Settings settings_;
    mutable std::optional<Identity> identity_;  // a cache: the account, once looked up
};

}  // namespace

TEA_SDK_BACKEND_PLUGIN(Bubblewrap, "bubblewrap", "1.0.0", TEA_ABI_1_9)
