// The environment a call gets. Nothing is inherited implicitly: the caller
// builds the exact list and the runner passes it as it is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tea::exec {

// The runtime's own environment, in order, as "NAME=VALUE".
std::vector<std::string> current_environment();

// The language-neutral allowlist (docs/cli.md): exact names plus LC_*.
bool in_clean_allowlist(std::string_view name);
std::vector<std::string> clean_environment(const std::vector<std::string> &from);

// Sets NAME to VALUE, replacing every earlier entry of that name.
void set_variable(std::vector<std::string> &env, std::string_view name, std::string_view value);
void unset_variable(std::vector<std::string> &env, std::string_view name);
// The value of NAME, or nullptr when unset.
const std::string *find_variable(const std::vector<std::string> &env, std::string_view name,
                                 std::string *value_out);

}  // namespace tea::exec
