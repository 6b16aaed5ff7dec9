// Git's configuration carried in a call's environment: GIT_CONFIG_COUNT with its GIT_CONFIG_KEY_n
// and GIT_CONFIG_VALUE_n pairs, which git reads as settings of the command line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tea::exec {

// Adds `key` = `value` as the list's last entry, after every entry the environment already holds,
// so a caller's own settings stay as they are and keep their order. Throws std::invalid_argument
// naming the variable when the list is one git would refuse (a count that is not a plain number, a
// key or value it announces and does not hold): numbering past it would hide the caller's error
// behind ours.
void add_git_config(std::vector<std::string> &env, std::string_view key, std::string_view value);

}  // namespace tea::exec
