#include "exec/environment.hpp"

#include <algorithm>
#include <array>

extern char **environ;  // NOLINT: POSIX

namespace tea::exec {
namespace {

std::string_view name_of(std::string_view entry) {
    const auto eq = entry.find('=');
    return eq == std::string_view::npos ? entry : entry.substr(0, eq);
}

// Variables every language needs to run at all, and none that steers one:
// PYTHONPATH, NODE_OPTIONS, RUBYOPT, PYTEST_ADDOPTS and their like are left out
// by construction, so a host setting cannot rig what the target runs.
constexpr std::array<std::string_view, 16> allowlist{
    "PATH", "HOME",   "USER", "LOGNAME", "SHELL",       "LANG",      "LANGUAGE", "TERM",
    "TZ",   "TMPDIR", "TMP",  "TEMP",    "VIRTUAL_ENV", "COLORTERM", "NO_COLOR", "SYSTEMROOT"};

}  // namespace

std::vector<std::string> current_environment() {
    std::vector<std::string> out;
    for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
        out.emplace_back(*e);
    }
    return out;
}

bool in_clean_allowlist(std::string_view name) {
    return name.rfind("LC_", 0) == 0 ||
           std::find(allowlist.begin(), allowlist.end(), name) != allowlist.end();
}

std::vector<std::string> clean_environment(const std::vector<std::string> &from) {
    std::vector<std::string> out;
    for (const auto &entry : from) {
        if (in_clean_allowlist(name_of(entry))) {
            out.push_back(entry);
        }
    }
    return out;
}

void unset_variable(std::vector<std::string> &env, std::string_view name) {
    env.erase(std::remove_if(env.begin(), env.end(),
                             [&](const std::string &e) {
                                 return e.find('=') != std::string::npos && name_of(e) == name;
                             }),
              env.end());
}

void set_variable(std::vector<std::string> &env, std::string_view name, std::string_view value) {
    unset_variable(env, name);
    std::string entry{name};
    entry += '=';
    entry += value;
    env.push_back(std::move(entry));
}

const std::string *find_variable(const std::vector<std::string> &env, std::string_view name,
                                 std::string *value_out) {
    for (auto it = env.rbegin(); it != env.rend(); ++it) {
        if (it->find('=') != std::string::npos && name_of(*it) == name) {
            if (value_out != nullptr) {
                *value_out = it->substr(name.size() + 1);
            }
            return &*it;
        }
    }
    return nullptr;
}

}  // namespace tea::exec
