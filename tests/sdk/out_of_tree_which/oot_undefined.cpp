// A plugin that calls a function no library defines: it must not link.
#include <string>
#include <string_view>
#include <tea/plugin.hpp>

extern "C" int oot_defined_nowhere(void);

namespace {

class Undefined {
   public:
    Undefined(tea::sdk::Host /*host*/, std::string_view /*config_json*/) {}
    void probe() {}
    std::string prepare(std::string_view /*spec_json*/) {
        return std::to_string(oot_defined_nowhere());
    }
};

}  // namespace

TEA_SDK_BACKEND_PLUGIN(Undefined, "oot-undefined", "1.0.0", TEA_ABI_1_0)
