#include "environment.hpp"

#include <algorithm>

namespace tea::bwrap {

namespace {

bool names(const std::string &entry, std::string_view name) {
    return entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
           entry[name.size()] == '=';
}

}  // namespace

std::string env_value(const std::vector<std::string> &env, std::string_view name) {
    std::string out;
    for (const auto &e : env) {
        if (names(e, name)) {
            out = e.substr(name.size() + 1);
        }
    }
    return out;
}

void set_env(std::vector<std::string> &env, std::string_view name, const std::string &value) {
    std::erase_if(env, [&](const std::string &e) { return names(e, name); });
    env.push_back(std::string{name} + "=" + value);
}

std::vector<std::string> target_environment(const documents::LaunchSpec &spec,
                                            const std::string &temp_mount) {
    std::vector<std::string> env = spec.env;
    std::erase_if(env, [](const std::string &e) {
        return e.rfind("NODE_V8_COVERAGE=", 0) == 0;  // a coverage dump would write outside
    });
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
