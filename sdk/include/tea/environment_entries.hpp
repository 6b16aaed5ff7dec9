// An environment held as "NAME=VALUE" entries (a launch spec's env, a plan's env), read and set
// by name, for a backend that builds its target's environment. Header-only, C++17.
//
//   tea::environment_entries::value_of(env, "TMPDIR");          // the last entry's value, or ""
//   tea::environment_entries::set(env, "HOME", home);           // every HOME= replaced by one
//   tea::environment_entries::remove(env, "NODE_V8_COVERAGE");  // every one removed
//
// A name matches an entry that begins with the name and '='. An entry with no '=' names nothing
// and is kept as it is: a parent may exec with anything, and the target gets what it was given.
#ifndef TEA_ENVIRONMENT_ENTRIES_HPP
#define TEA_ENVIRONMENT_ENTRIES_HPP

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace tea::environment_entries {

inline bool names(std::string_view entry, std::string_view name) noexcept {
    return entry.size() > name.size() && entry.substr(0, name.size()) == name &&
           entry[name.size()] == '=';
}

// The value of the last entry of `name` (the one getenv(3) of a C library that reads from the
// end would see); "" when there is none.
inline std::string value_of(const std::vector<std::string> &env, std::string_view name) {
    for (auto it = env.rbegin(); it != env.rend(); ++it) {
        if (names(*it, name)) {
            return it->substr(name.size() + 1);
        }
    }
    return {};
}

inline void remove(std::vector<std::string> &env, std::string_view name) {
    env.erase(std::remove_if(env.begin(), env.end(),
                             [&](const std::string &e) { return names(e, name); }),
              env.end());
}

// Every entry of `name` replaced by one `name=value` at the end.
inline void set(std::vector<std::string> &env, std::string_view name, std::string_view value) {
    remove(env, name);
    std::string entry{name};
    entry += '=';
    entry += value;
    env.push_back(std::move(entry));
}

}  // namespace tea::environment_entries

#endif  // TEA_ENVIRONMENT_ENTRIES_HPP
