#include "environment.hpp"

#include <algorithm>
#include <tea/environment_entries.hpp>

namespace tea::bwrap {

std::string env_value(const std::vector<std::string> &env, std::string_view name) {
    return environment_entries::value_of(env, name);
}

void set_env(std::vector<std::string> &env, std::string_view name, const std::string &value) {
    environment_entries::set(env, name, value);
}

std::vector<std::string> target_environment(const documents::LaunchSpec &spec,
                                            const std::string &temp_mount) {
    std::vector<std::string> env = spec.env;
    // A coverage dump would write outside.
    environment_entries::remove(env, "NODE_V8_COVERAGE");
    set_env(env, "PWD", spec.cwd);
    set_env(env, "HOME", spec.home);
    set_env(env, "XDG_CONFIG_HOME", spec.home + "/.config");
    set_env(env, "XDG_CACHE_HOME", spec.home + "/.cache");
    set_env(env, "XDG_DATA_HOME", spec.home + "/.local/share");
    for (const char *name : {"TMPDIR", "TMP", "TEMP"}) {
        set_env(env, name, temp_mount);
    }
    return env;
}

bool settable(const std::vector<std::string> &env) {
    return std::all_of(env.begin(), env.end(), [](const std::string &e) {
        const auto eq = e.find('=');
        return eq != std::string::npos && eq > 0;
    });
}

}  // namespace tea::bwrap
