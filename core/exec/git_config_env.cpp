#include "exec/git_config_env.hpp"

#include <stdexcept>

#include "exec/environment.hpp"

namespace tea::exec {
namespace {

constexpr std::string_view kCount = "GIT_CONFIG_COUNT";
// Below git's own bound (INT_MAX), with room for the entry added.
constexpr std::size_t kMaxCountDigits = 9;

std::size_t entries_in(const std::vector<std::string> &env) {
    std::string text;
    if (find_variable(env, kCount, &text) == nullptr) {
        return 0;
    }
    // git reads the count with strtoul, which also takes spaces, a sign and an empty string; only
    // plain digits have one meaning, so nothing else is numbered past.
    if (text.empty() || text.size() > kMaxCountDigits ||
        text.find_first_not_of("0123456789") != std::string::npos) {
        throw std::invalid_argument(std::string{kCount} + "=" + text +
                                    ": expected the number of GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n "
                                    "pairs, in decimal digits");
    }
    const auto count = static_cast<std::size_t>(std::stoul(text));
    for (std::size_t i = 0; i < count; ++i) {
        for (const char *part : {"GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"}) {
            const auto name = part + std::to_string(i);
            if (find_variable(env, name, nullptr) == nullptr) {
                throw std::invalid_argument(name + " is not set, though " + std::string{kCount} +
                                            " is " + text + " (git refuses such a list)");
            }
        }
    }
    return count;
}

}  // namespace

void add_git_config(std::vector<std::string> &env, std::string_view key, std::string_view value) {
    const auto n = entries_in(env);
    set_variable(env, "GIT_CONFIG_KEY_" + std::to_string(n), key);
    set_variable(env, "GIT_CONFIG_VALUE_" + std::to_string(n), value);
    set_variable(env, kCount, std::to_string(n + 1));
}

}  // namespace tea::exec
