// The target's environment inside the sandbox: the launch spec's, with the places the view moves
// (its home, its temp directory) pointed at where the view has them.
#pragma once

#include <string>
#include <string_view>
#include <tea/documents.hpp>
#include <vector>

namespace tea::bwrap {

// The value of the last `name=` entry; "" when there is none.
std::string env_value(const std::vector<std::string> &env, std::string_view name);

// Replaces every `name=` entry with one `name=value` at the end.
void set_env(std::vector<std::string> &env, std::string_view name, const std::string &value);

// The spec's environment with PWD, HOME and the XDG directories of the call, and the temp
// variables at `temp_mount`, the call's temp directory in the view.
std::vector<std::string> target_environment(const documents::LaunchSpec &spec,
                                            const std::string &temp_mount);

// Whether every entry is NAME=VALUE with a name, as bwrap's --setenv carries them. An entry
// without one (a parent may exec with anything) goes to the target as it is, through the helper.
bool settable(const std::vector<std::string> &env);

}  // namespace tea::bwrap
