// The Seatbelt backend (macOS): a launch spec in, a plan out that runs the target under
// `sandbox-exec -p <profile>`, with a profile written for the call. Nothing runs in prepare, and
// nothing of macOS is needed to build it: the programs it names are looked up when a call runs.
//
// One mechanism per file: settings.cpp (the [plugin.seatbelt] table), host_probe.cpp (can this
// host confine), sbpl_string.cpp (a path as an SBPL literal, or refused), profile.cpp (the
// profile), seatbelt_plan.cpp (the spec checked, the environment and the command line).
// What each rule closes, and what is left: docs/macos.md.
#include <string>
#include <string_view>
#include <tea/documents.hpp>
#include <tea/plugin.hpp>

#include "host_probe.hpp"
#include "seatbelt_plan.hpp"
#include "settings.hpp"

namespace {

class Seatbelt {
   public:
    Seatbelt(tea::sdk::Host /*host*/, std::string_view config)
        : settings_(tea::seatbelt::parse_settings(config)) {}

    void probe() const {
#if defined(__APPLE__)
        tea::seatbelt::check_sandbox_exec(settings_.sandbox_exec, "/usr/bin/true");
#else
        throw tea::sdk::Unavailable(tea::seatbelt::kMacOsOnly);
#endif
    }

    std::string prepare(std::string_view text) const {
        tea::documents::LaunchSpec spec;
        try {
            spec = tea::documents::decode_launch_spec(text);
        } catch (const tea::documents::DocumentError &e) {
            throw tea::sdk::Invalid(e.what());
        }
        return tea::documents::encode(tea::seatbelt::seatbelt_plan(settings_, spec));
    }

   private:
    tea::seatbelt::Settings settings_;
};

}  // namespace

TEA_SDK_BACKEND_PLUGIN(Seatbelt, "seatbelt", "1.0.0", TEA_ABI_1_10)
